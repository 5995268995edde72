// What every browser scenario of the playground shares: the command line, Chromium started
// headless through playwright-core, every request and script problem recorded, and the
// closing checks (every request stayed on the server's origin, nothing was stored).
//
// HALO_CHROMIUM: the browser (default /usr/bin/chromium).

import assert from 'node:assert/strict';

import { chromium } from 'playwright-core';

/// The playground's address from the command line (`node SCRIPT http://127.0.0.1:PORT/playground`).
export function address(script) {
  const url = process.argv[2];
  if (!url) {
    console.error(`usage: node ${script} http://127.0.0.1:PORT/playground`);
    process.exit(2);
  }
  return url;
}

export function step(text) {
  console.log(`- ${text}`);
}

/// Runs `scenario({ page, requests, names })` in a fresh headless browser, then checks that
/// every request stayed on `origin`, that no secret reached a URL, that the page stored
/// nothing, and that no script error or policy violation happened (console errors matching
/// one of `expected` aside).
export async function run(origin, scenario, { secrets = [], expected = [] } = {}) {
  const executablePath = process.env.HALO_CHROMIUM || '/usr/bin/chromium';
  const browser = await chromium.launch({ executablePath, headless: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const requests = [];
    const problems = [];
    context.on('request', (request) => {
      requests.push({
        method: request.method(),
        url: request.url(),
        headers: request.headers(),
        body: request.postData(),
      });
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // Chromium logs each 4xx answer a fetch gets; those are expected. Policy violations
      // and script errors are not.
      const text = message.text();
      if (message.type() === 'error' && !/status of 4\d\d/.test(text) && !expected.some((re) => re.test(text))) {
        problems.push(`console: ${text}`);
      }
    });
    const names = () => page.$$eval('#tools [data-tool]', (buttons) => buttons.map((b) => b.dataset.tool));

    await scenario({ page, requests, names });

    step('offline: every request stayed on the server, nothing stored');
    for (const request of requests) {
      assert.equal(new URL(request.url).origin, origin, `a request left the server: ${request.url}`);
      for (const secret of secrets) {
        assert.ok(!request.url.includes(secret), `a secret in a URL: ${request.url}`);
      }
    }
    const stored = await page.evaluate(() => localStorage.length + sessionStorage.length + document.cookie.length);
    assert.equal(stored, 0, 'the page stored something');
    assert.deepEqual(problems, []);
    console.log(`ok: ${requests.length} requests, all to ${origin}`);
  } finally {
    await browser.close();
  }
}

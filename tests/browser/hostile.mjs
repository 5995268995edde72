// The playground against an API whose every text is markup (tests/tests/playground_browser.rs
// serves it and passes the strings in HALO_MARKUP, a JSON array): each must be shown as the
// text it is, and none may run or become an element.
//
//   HALO_MARKUP='[...]' node hostile.mjs http://127.0.0.1:PORT/playground

import assert from 'node:assert/strict';

import { address, run, step } from './harness.mjs';

const playground = address('hostile.mjs');
const origin = new URL(playground).origin;
const markup = JSON.parse(process.env.HALO_MARKUP ?? '[]');
assert.equal(markup.length, 6, 'HALO_MARKUP: the six strings the API uses');
const [api, description, tag, option, progress, result] = markup;

await run(origin, async ({ page, requests, names }) => {
  step("the API's title and description, as text");
  await page.goto(playground);
  await page.waitForSelector('#tools [data-tool]');
  const heading = await page.textContent('#api');
  assert.ok(heading.includes(api) && heading.includes(description), heading);

  step('a tag of markup: a chip, and a filter asked of the server');
  const tags = await page.$$eval('#tags [data-tag]', (chips) => chips.map((c) => c.textContent));
  assert.deepEqual(tags.sort(), ['read', tag].sort());
  await page.getByRole('button', { name: tag, exact: true }).click();
  await page.waitForFunction(() => document.querySelector('#clear-tags') !== null);
  assert.ok(
    requests.some((r) => r.method === 'OPTIONS' && new URL(r.url).searchParams.get('tags') === tag),
    `no filtered discovery in ${requests.map((r) => r.url)}`,
  );
  assert.deepEqual(await names(), ['echo']);

  step("the tool's texts");
  assert.equal(await page.textContent('#tools .tool-description'), description);
  await page.click('#tools [data-tool="echo"]');
  await page.waitForSelector('#tool-why');
  assert.equal(await page.textContent('#tool-why'), api);
  assert.ok((await page.textContent('#detail')).includes(description));
  const options = await page.$$eval('select[data-field="note"] option', (items) => items.map((o) => o.textContent));
  assert.deepEqual(options.slice(1), [option, 'fail']);

  step('streamed progress and a result of markup');
  await page.fill('[data-field="id"]', 'x');
  await page.selectOption('select[data-field="note"]', { label: option });
  await page.click('#invoke');
  await page.waitForSelector('#result');
  assert.equal(await page.textContent('#events [data-event="tool_progress"] .event-summary'), `1/1 · ${progress}`);
  const echoed = JSON.parse(await page.textContent('#result pre'));
  assert.deepEqual(echoed, { id: 'x', note: option, html: result });

  step('a problem of markup');
  await page.selectOption('select[data-field="note"]', { label: 'fail' });
  await page.click('#invoke');
  await page.waitForSelector('#problem');
  assert.equal(await page.textContent('#problem [data-problem="title"]'), api);
  assert.equal(await page.textContent('#problem [data-problem="detail"]'), result);
  assert.equal(await page.textContent('#problem .errors code'), tag);
  assert.equal(await page.textContent('#problem .errors tbody td:nth-child(2)'), description);

  step('none of it ran or became an element');
  const found = await page.evaluate(() => ({
    pwned: window.pwned ?? null,
    images: document.querySelectorAll('img').length,
    scripts: document.querySelectorAll('script').length,
    injected: document.querySelectorAll('b, [onerror], [onmouseover]').length,
  }));
  assert.deepEqual(found, { pwned: null, images: 1, scripts: 1, injected: 0 });
});

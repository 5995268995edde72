// Drives the bookstore's playground in headless Chromium, as a developer would: without and
// with credentials, filtered by a tag, a streamed call whose progress must show up live, a
// validation problem, input refused before sending, a header and a JSON array placed,
// refused credentials, and approvals: a refund held for one, listed, approved, denied, decided
// twice, and hidden from a reader. Every request the page makes must stay on the server's
// origin.
//
//   node playground.mjs http://127.0.0.1:PORT/playground
//
// HALO_CHROMIUM: the browser (default /usr/bin/chromium).
// PLAYGROUND_SCREENSHOT: where the screenshot goes (default <workspace>/target/playground.png).
// Run by tests/tests/playground_browser.rs, which starts the bookstore.

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { address, run, step } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const playground = address('playground.mjs');
const origin = new URL(playground).origin;
const screenshot = process.env.PLAYGROUND_SCREENSHOT || resolve(here, '..', '..', 'target', 'playground.png');
/// Long enough that the progress must be seen before the result when it is streamed live
/// (the bookstore takes 40 ms per chapter, so 800 ms: the most it reads, for a wide window
/// on a loaded machine), short of the tool's 5 s deadline.
const CHAPTERS = 20;
/// Where approvals are listed and decided.
const APPROVALS = '/.well-known/halo/approvals';
/// A refund's reason (its argument) and a denial's reason: markup that must stay text.
const MARKUP = `<img src=x onerror="window.pwned='approval'">`;
const REFUSAL = 'not this one <b onmouseover="window.pwned=1">twice</b>';

await run(origin, async ({ page, requests, names }) => {
  /// A fact of the call held for approval (`state`, `approval`, `decided by`, `reason`).
  const held = (fact) => page.textContent(`#approval-wait [data-approval-fact="${fact}"]`);
  /// The id of the next call held, once it is not `previous`.
  const nextApproval = async (previous) => {
    await page.waitForFunction(
      (old) => {
        const id = document.querySelector('#approval-wait [data-approval-fact="approval"]')?.textContent;
        return id !== undefined && id !== old;
      },
      previous,
    );
    return held('approval');
  };
  const listIs = (expected) => page.waitForFunction(
    (want) => [...document.querySelectorAll('#tools [data-tool]')].map((b) => b.dataset.tool).join(',') === want,
    expected.join(','),
  );

  step('the page, asked for without its trailing slash');
  await page.goto(playground.replace(/\/+$/, ''));
  assert.equal(new URL(page.url()).pathname.endsWith('/playground/'), true, page.url());
  await page.waitForSelector('#tools [data-tool]');
  await page.waitForFunction(() => document.querySelector('#api')?.textContent.includes('Bookstore'));
  const anonymous = await names();
  assert.ok(anonymous.includes('get_book'), `anonymous tools: ${anonymous}`);
  assert.ok(!anonymous.includes('summarize_book'), `an anonymous caller sees summarize_book: ${anonymous}`);
  assert.match(await page.textContent('#caller'), /No credentials/);

  step('credentials that are refused: the 401 problem is shown');
  await page.fill('#credentials', 'Bearer not-a-token');
  await page.click('#connect');
  await page.waitForSelector('#discovery-error #problem');
  assert.equal(await page.textContent('#discovery-error [data-problem="status"]'), '401');
  assert.deepEqual(await names(), []);

  step('a reader sees more tools than anyone');
  await page.fill('#credentials', 'Bearer demo-reader');
  await page.click('#connect');
  await page.waitForSelector('#tools [data-tool="summarize_book"]');
  const reader = await names();
  assert.ok(reader.length > anonymous.length, `reader ${reader} vs anonymous ${anonymous}`);
  assert.ok(!reader.includes('create_book'), `a reader sees create_book: ${reader}`);
  const discovery = requests.filter((r) => r.method === 'OPTIONS' && r.headers.authorization === 'Bearer demo-reader');
  assert.ok(discovery.length > 0, 'discovery did not carry the credentials');
  assert.equal(discovery.at(-1).headers.accept, 'application/llm+json');

  step('an API key, in the header named beside it, shows the inventory tools');
  assert.ok(!reader.includes('get_stock'), `a reader sees get_stock: ${reader}`);
  // One caller per request: the bookstore's key holder, without the bearer token.
  await page.fill('#credentials', '');
  await page.fill('#api-key', 'demo-key');
  await page.click('#connect');
  await page.waitForSelector('#tools [data-tool="get_stock"]');
  const keyed = requests.filter((r) => r.method === 'OPTIONS' && r.headers['x-api-key'] === 'demo-key');
  assert.ok(keyed.length > 0, 'discovery did not carry the API key');
  assert.equal(keyed.at(-1).headers.authorization, undefined);
  assert.match(await page.textContent('#caller'), /these credentials/);
  await page.fill('#credentials', 'Bearer demo-reader');
  await page.fill('#api-key', '');
  await page.click('#connect');
  await page.waitForFunction(() => !document.querySelector('#tools [data-tool="get_stock"]'));
  assert.deepEqual(await names(), reader);

  step('filtered by a tag, on the server');
  const tags = await page.$$eval('#tags [data-tag]', (chips) => chips.map((c) => c.dataset.tag));
  for (const tag of ['books', 'read', 'expensive', 'orders', 'weather']) {
    assert.ok(tags.includes(tag), `tag ${tag} missing from ${tags}`);
  }
  await page.click('#tags [data-tag="expensive"]');
  await listIs(['summarize_book']);
  assert.ok(
    requests.some((r) => r.method === 'OPTIONS' && new URL(r.url).search === '?tags=expensive'),
    'the filter was not asked of the server',
  );
  assert.equal(await page.getAttribute('#tags [data-tag="expensive"]', 'aria-pressed'), 'true');

  step('the streaming tool: its schema and a typed form');
  await page.click('#tools [data-tool="summarize_book"]');
  await page.waitForSelector('#tool-why');
  assert.match(await page.textContent('#tool-why'), /what a book is about/);
  assert.equal(await page.getAttribute('[data-field="id"]', 'type'), 'number');
  assert.equal(await page.getAttribute('[data-field="chapters"]', 'type'), 'number');
  const styles = await page.$$eval('select[data-field="style"] option', (options) => options.map((o) => o.textContent));
  assert.deepEqual(styles.slice(1), ['brief', 'detailed']);

  step('a streamed call: progress shown live, then the result');
  await page.fill('[data-field="id"]', '1');
  await page.fill('[data-field="chapters"]', String(CHAPTERS));
  await page.selectOption('select[data-field="style"]', { label: 'detailed' });
  assert.equal(await page.isChecked('#stream'), true);
  const live = page.waitForFunction(
    () => document.querySelectorAll('#events [data-event="tool_progress"]').length >= 1
      && document.querySelector('#result') === null,
    null,
    { polling: 'raf' },
  );
  await page.click('#invoke');
  await live;
  await page.waitForSelector('#result');
  const events = await page.$$eval('#events [data-event]', (items) => items.map((item) => ({
    type: item.dataset.event,
    id: item.querySelector('.event-id').textContent,
    summary: item.querySelector('.event-summary')?.textContent ?? '',
  })));
  assert.equal(events.length, CHAPTERS + 2, JSON.stringify(events));
  assert.equal(events[0].type, 'tool_start');
  assert.equal(events.at(-1).type, 'tool_end');
  events.slice(1, -1).forEach((event, i) => {
    assert.equal(event.type, 'tool_progress');
    assert.equal(event.summary, `${i + 1}/${CHAPTERS} · summarising chapter ${i + 1}`);
  });
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => `#${i + 1}`));
  const result = JSON.parse(await page.textContent('#result pre'));
  assert.equal(result.title, 'Dune');
  assert.equal(result.style, 'detailed');
  assert.equal(result.chapters.length, CHAPTERS);
  assert.match(await page.textContent('#status'), /^200 OK · text\/event-stream · call c-/);
  const invoked = requests.filter((r) => r.method === 'POST').at(-1);
  assert.equal(new URL(invoked.url).pathname, '/api/books/1/summarize');
  assert.equal(invoked.headers.accept, 'text/event-stream');
  assert.equal(invoked.headers.authorization, 'Bearer demo-reader');
  assert.deepEqual(JSON.parse(invoked.body), { chapters: CHAPTERS, style: 'detailed' });
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });

  step('input the API refuses: the 422 problem, with its pointer');
  await page.fill('[data-field="chapters"]', '50');
  await page.click('#invoke');
  await page.waitForSelector('#problem');
  assert.equal(await page.textContent('#problem [data-problem="status"]'), '422');
  const pointers = await page.$$eval('#problem .errors code', (codes) => codes.map((c) => c.textContent));
  assert.deepEqual(pointers, ['/chapters']);

  step('a required field left empty: refused before sending');
  const posts = requests.filter((r) => r.method === 'POST').length;
  await page.fill('[data-field="id"]', '');
  await page.click('#invoke');
  await page.waitForSelector('#input-errors');
  assert.match(await page.textContent('#input-errors'), /`id` is required/);
  assert.equal(requests.filter((r) => r.method === 'POST').length, posts, 'sent anyway');

  step('an admin: a JSON array and a header argument');
  await page.fill('#credentials', 'Bearer demo-admin');
  await page.click('#connect');
  await page.click('#tags [data-tag="expensive"]'); // off again: every tool
  await page.waitForSelector('#tools [data-tool="create_order"]');
  await page.click('#tools [data-tool="create_order"]');
  await page.waitForSelector('textarea[data-field="items"]');
  await page.fill('[data-field="customer_email"]', 'ada@example.com');
  await page.fill('[data-field="items"]', '[{"book_id": 1, "quantity": 1');
  await page.click('#invoke');
  await page.waitForSelector('#input-errors');
  assert.match(await page.textContent('#input-errors'), /`items` is not valid JSON/);
  assert.equal(requests.filter((r) => r.method === 'POST').length, posts, 'sent anyway');
  await page.fill('[data-field="items"]', '[{"book_id": 1, "quantity": 1}]');
  await page.fill('[data-field="Idempotency-Key"]', 'playground-order-1');
  await page.uncheck('#stream');
  await page.click('#invoke');
  await page.waitForSelector('#result');
  assert.match(await page.textContent('#status'), /^201 /);
  const order = requests.filter((r) => r.method === 'POST').at(-1);
  assert.equal(new URL(order.url).pathname, '/api/orders');
  assert.equal(order.headers['idempotency-key'], 'playground-order-1');
  assert.equal(order.headers.accept, 'application/json');
  assert.deepEqual(JSON.parse(order.body), {
    customer_email: 'ada@example.com',
    items: [{ book_id: 1, quantity: 1 }],
  });
  const placed = JSON.parse(await page.textContent('#result pre'));

  step('approvals: an admin may decide them, so the panel shows, empty');
  await page.waitForSelector('#approvals', { state: 'visible' });
  await page.waitForSelector('#approval-list li.empty');
  const listing = requests.filter((r) => r.method === 'GET' && new URL(r.url).pathname === APPROVALS).at(-1);
  assert.equal(listing.headers.authorization, 'Bearer demo-admin');

  step('the order is charged');
  await page.click('#tools [data-tool="charge_payment"]');
  await page.waitForSelector('[data-field="payment_method"]');
  await page.fill('[data-field="order_id"]', String(placed.id));
  await page.fill('[data-field="amount"]', String(placed.total));
  await page.fill('[data-field="currency"]', 'EUR');
  await page.fill('[data-field="payment_method"]', 'pm_card_visa');
  await page.uncheck('#stream');
  await page.click('#invoke');
  await page.waitForSelector('#result');
  assert.match(await page.textContent('#status'), /^201 /);
  const charge = JSON.parse(await page.textContent('#result pre'));

  step('a refund waits for approval');
  await page.click('#tools [data-tool="refund_payment"]');
  await page.waitForSelector('[data-field="reason"]');
  await page.fill('[data-field="id"]', charge.id);
  await page.fill('[data-field="reason"]', 'customer returned the book');
  await page.uncheck('#stream');
  await page.click('#invoke');
  await page.waitForSelector('#approval-wait');
  assert.match(await page.textContent('#status'), /^202 /);
  assert.equal(await page.textContent('#approval-wait h3'), 'Waiting for approval');
  assert.equal(await held('state'), 'pending');
  const first = await held('approval');

  step('the panel lists it: tool, call, caller, arguments');
  const item = `#approval-list [data-approval="${first}"]`;
  await page.waitForSelector(item);
  assert.equal(await page.textContent(`${item} .approval-tool`), 'refund_payment');
  assert.equal(await page.textContent(`${item} .approval-call`), `POST /api/payments/${charge.id}/refund`);
  assert.deepEqual(JSON.parse(await page.textContent(`${item} pre`)), { reason: 'customer returned the book' });
  const facts = await page.$eval(`${item} dl`, (dl) => Object.fromEntries(
    [...dl.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
  assert.equal(facts.caller, 'admin');
  assert.equal(facts.id, first);
  assert.ok(facts.requested && facts.expires, JSON.stringify(facts));

  step('approved: the call runs, and the list empties');
  await page.click(`${item} [data-action="approve"]`);
  await page.waitForSelector('#approval-outcome [data-state="approved"]');
  assert.equal(await page.textContent('#approval-outcome'), 'refund_payment: approved, the call answered 200');
  await page.waitForSelector('#approval-list li.empty');

  step('checking the call again shows its answer');
  await page.click('#check-approval');
  await page.waitForSelector('#approval-wait #result');
  assert.equal(await page.textContent('#approval-wait h3'), 'Approved');
  assert.equal(await held('state'), 'approved');
  assert.equal(await held('decided by'), 'admin');
  assert.match(await page.textContent('#approval-wait #result h3'), /status 200/);
  const refund = JSON.parse(await page.textContent('#approval-wait #result pre'));
  assert.equal(refund.charge_id, charge.id);
  assert.equal(refund.reason, 'customer returned the book');
  const check = requests.filter((r) => r.method === 'GET' && new URL(r.url).pathname === `${APPROVALS}/${first}`).at(-1);
  assert.equal(check.headers.authorization, 'Bearer demo-admin');

  step('a refund whose arguments are markup: listed as text, then denied with a reason');
  await page.fill('[data-field="reason"]', MARKUP);
  await page.click('#invoke');
  const second = await nextApproval(first);
  const hostile = `#approval-list [data-approval="${second}"]`;
  await page.waitForSelector(hostile);
  assert.deepEqual(JSON.parse(await page.textContent(`${hostile} pre`)), { reason: MARKUP });
  await page.fill(`${hostile} .approval-reason`, REFUSAL);
  await page.click(`${hostile} [data-action="deny"]`);
  await page.waitForSelector('#approval-outcome [data-state="denied"]');
  assert.equal(await page.textContent('#approval-outcome'), `refund_payment: denied (reason: ${REFUSAL})`);
  await page.waitForSelector('#approval-list li.empty');
  await page.click('#check-approval');
  await page.waitForFunction(() => document.querySelector('#approval-wait h3')?.textContent.startsWith('Denied'));
  assert.equal(await held('state'), 'denied');
  assert.equal(await held('reason'), REFUSAL);
  assert.equal(await page.$('#approval-wait #result'), null, 'a denied call has no answer');
  const found = await page.evaluate(() => ({
    pwned: window.pwned ?? null,
    images: document.querySelectorAll('img').length,
    injected: document.querySelectorAll('b, [onerror]').length,
  }));
  assert.deepEqual(found, { pwned: null, images: 1, injected: 0 });

  step('a decision on an approval decided meanwhile: the 409 problem\'s detail');
  await page.fill('[data-field="reason"]', 'asked twice');
  await page.click('#invoke');
  const third = await nextApproval(second);
  const stale = `#approval-list [data-approval="${third}"]`;
  await page.waitForSelector(stale);
  // Another approver denies it first.
  const elsewhere = await page.evaluate(async (url) => (await fetch(url, {
    method: 'POST', headers: { authorization: 'Bearer demo-admin' }, body: '',
  })).status, `${APPROVALS}/${third}/deny`);
  assert.equal(elsewhere, 200);
  await page.click(`${stale} [data-action="approve"]`);
  await page.waitForSelector('#approval-outcome [data-state="refused"]');
  assert.match(await page.textContent('#approval-outcome'), /^refund_payment was not approved: 409: .*already/);
  await page.waitForSelector('#approval-list li.empty');

  step('a streamed refund: approval_pending, then the call runs once approved');
  await page.check('#stream');
  await page.fill('[data-field="id"]', 'ch_none');
  await page.fill('[data-field="reason"]', 'streamed');
  await page.click('#invoke');
  await page.waitForSelector('#events [data-event="approval_pending"]');
  assert.match(await page.textContent('#events [data-event="approval_pending"] .event-summary'), /^waiting for approval · \S+ · pending$/);
  await page.waitForSelector('#approval-list [data-approval] [data-action="approve"]');
  await page.click('#approval-list [data-approval] [data-action="approve"]');
  await page.waitForSelector('#detail #problem');
  assert.equal(await page.textContent('#problem [data-problem="status"]'), '404');
  assert.match(await page.textContent('#problem [data-problem="detail"]'), /no charge has the id ch_none/);
  assert.equal(await page.textContent('#approval-outcome'), 'refund_payment: approved, the call answered 404');

  step('a reader may not list approvals: the panel hides');
  const refused = page.waitForResponse((r) => new URL(r.url()).pathname === APPROVALS
    && r.request().headers().authorization === 'Bearer demo-reader');
  await page.fill('#credentials', 'Bearer demo-reader');
  await page.click('#connect');
  assert.equal((await refused).status(), 403);
  await page.waitForSelector('#approvals', { state: 'hidden' });
  assert.equal(await page.$$eval('#approval-list li', (items) => items.length), 0);
}, { secrets: ['demo-reader', 'demo-admin', 'not-a-token', 'demo-key'] });

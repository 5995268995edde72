// A streamed call whose connection breaks part-way (tests/tests/playground_browser.rs serves
// the bookstore behind a proxy that cuts the first event stream): the playground resumes the
// call with Last-Event-ID and Halo-Call-Id, shows every event exactly once and in order, and
// the result (the server replays what was missed; it does not run the tool again).
//
//   node resume.mjs http://127.0.0.1:PORT/playground

import assert from 'node:assert/strict';

import { address, run, step } from './harness.mjs';

const playground = address('resume.mjs');
const origin = new URL(playground).origin;
const CHAPTERS = 6;
/// Where the proxy cuts the first stream: after this many whole events.
const CUT_AFTER = Number(process.env.HALO_CUT_AFTER ?? '3');

await run(origin, async ({ page, requests }) => {
  step('a reader picks the streaming tool');
  await page.goto(playground);
  await page.fill('#credentials', 'Bearer demo-reader');
  await page.click('#connect');
  await page.waitForSelector('#tools [data-tool="summarize_book"]');
  await page.click('#tools [data-tool="summarize_book"]');
  await page.waitForSelector('[data-field="chapters"]');
  await page.fill('[data-field="id"]', '1');
  await page.fill('[data-field="chapters"]', String(CHAPTERS));

  step('the stream is cut part-way; the call is resumed, not run again');
  await page.click('#invoke');
  await page.waitForSelector('#result', { timeout: 30_000 });
  const events = await page.$$eval('#events [data-event]', (items) => items.map((item) => ({
    type: item.dataset.event,
    id: item.querySelector('.event-id').textContent,
  })));
  const resumes = events.filter((e) => e.type === 'resume');
  assert.equal(resumes.length, 1, JSON.stringify(events));
  const shown = events.filter((e) => e.type !== 'resume');
  assert.deepEqual(shown.map((e) => e.id), shown.map((_, i) => `#${i + 1}`), JSON.stringify(events));
  assert.equal(shown.length, CHAPTERS + 2);
  assert.equal(shown[0].type, 'tool_start');
  assert.equal(shown.at(-1).type, 'tool_end');
  assert.equal(events.findIndex((e) => e.type === 'resume'), CUT_AFTER, 'resumed where the cut was');
  const result = JSON.parse(await page.textContent('#result pre'));
  assert.equal(result.chapters.length, CHAPTERS);

  const posts = requests.filter((r) => r.method === 'POST');
  assert.equal(posts.length, 2, 'one call, one resumption');
  const [first, again] = posts;
  assert.equal(first.headers['last-event-id'], undefined);
  assert.equal(again.headers['last-event-id'], String(CUT_AFTER));
  assert.match(again.headers['halo-call-id'] ?? '', /^c-/);
  assert.ok((await page.textContent('#status')).includes(again.headers['halo-call-id']));
  assert.equal(again.body, first.body, 'the same request again');
  assert.equal(again.headers.authorization, 'Bearer demo-reader');
}, { secrets: ['demo-reader'], expected: [/net::ERR_/] });

// Approvals (HALO §10.3.2) in the playground: the panel that lists the calls waiting for an
// approver and decides them, and the view of a call of one's own that was held (`202`).
//
// An approval's tool, arguments, caller and reasons come from callers of the API, so they are
// untrusted text: they reach the page through `h` (text and attributes) only.
//
// This module and playground.js import each other. That is safe because this one runs no code
// when it loads: it only defines functions, which use the imported ones when they are called.

import { answerView, apiHeaders, apiUrl, h, isObject, isProblem, pre } from './playground.js';

const APPROVALS = '/.well-known/halo/approvals';

/// Bumped by every listing, so an answer that arrives late (other credentials since) is
/// dropped.
let listing = 0;

function $(id) {
  return document.getElementById(id);
}

/// A request to the API about approvals, its answer read whole: `{status, body}` with a JSON
/// body parsed, or status 0 and why when it could not be sent or was redirected. `path` is the
/// API's own (like a manifest `url` or a `Location`), so it goes under the API's base.
async function ask(path, init = {}) {
  try {
    const headers = apiHeaders('application/json');
    if (init.body !== undefined) headers.set('Content-Type', 'application/json');
    const response = await fetch(apiUrl(path), { ...init, headers, cache: 'no-store', redirect: 'manual' });
    if (response.type === 'opaqueredirect') return { status: 0, body: 'a redirect, not followed' };
    const text = await response.text();
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Shown as the text it is.
    }
    return { status: response.status, body };
  } catch (error) {
    return { status: 0, body: error.message };
  }
}

/// One line for an answer that did not go as hoped: its status and the problem's detail.
function failure(answer) {
  const { status, body } = answer;
  let detail = '';
  if (isProblem(body)) detail = String(body.detail ?? body.title ?? '');
  else if (typeof body === 'string') detail = body.slice(0, 300);
  return [status ? String(status) : 'no answer', detail].filter(Boolean).join(': ');
}

/// An RFC 3339 time in the reader's own zone, or the text as it came.
function when(text) {
  const time = new Date(String(text));
  if (typeof text !== 'string' || Number.isNaN(time.getTime())) return String(text ?? '');
  return h('time', { datetime: text, text: time.toLocaleString() });
}

// ---------------------------------------------------------------------------------------
// The panel: shown when these credentials may list approvals.

/// Lists the pending approvals. The panel shows when the list answers; it hides on `401`,
/// `403` or `404` (credentials that may not decide, or no approver), and when it was hidden
/// anyway.
export async function refreshApprovals() {
  const mine = ++listing;
  const answer = await ask(APPROVALS);
  if (mine !== listing) return;
  const panel = $('approvals');
  const approvals = answer.status === 200 && Array.isArray(answer.body?.approvals) ? answer.body.approvals : null;
  if (approvals) {
    panel.hidden = false;
    showApprovals(approvals.filter(isObject));
  } else if (panel.hidden || [401, 403, 404].includes(answer.status)) {
    panel.hidden = true;
    $('approval-list').replaceChildren();
  } else {
    outcome(h('p', { class: 'error', text: `The approvals could not be listed (${failure(answer)}).` }));
  }
}

/// Forgets what the panel showed, for other credentials.
export function resetApprovals() {
  outcome();
  refreshApprovals();
}

function outcome(...children) {
  $('approval-outcome').replaceChildren(...children);
}

function showApprovals(approvals) {
  $('approval-count').textContent = `(${approvals.length})`;
  const items = approvals.map(approvalItem);
  if (items.length === 0) items.push(h('li', { class: 'empty', text: 'Nothing waits for approval.' }));
  $('approval-list').replaceChildren(...items);
}

function approvalItem(approval) {
  const id = String(approval.id ?? '');
  const call = isObject(approval.call) ? approval.call : {};
  const reason = h('input', {
    type: 'text', class: 'approval-reason', placeholder: 'reason (optional)', maxlength: 1000,
    spellcheck: 'false', autocomplete: 'off', 'aria-label': `Reason for approval ${id}`,
  });
  const buttons = [];
  const button = (action, text, className) => h('button', {
    type: 'button', class: className, 'data-action': action, text,
    onclick: () => decide(approval, action, reason.value, buttons),
  });
  buttons.push(button('approve', 'Approve', 'primary small'), button('deny', 'Deny', 'small'));
  const facts = [
    ['caller', approval.caller === undefined ? 'anonymous' : String(approval.caller)],
    ['requested', when(approval.requested_at)],
    ['expires', when(approval.expires_at)],
    ['id', id],
  ];
  return h('li', { class: 'approval', 'data-approval': id },
    h('div', { class: 'approval-head' },
      h('span', { class: 'approval-tool', text: String(approval.tool ?? '') }),
      h('code', { class: 'approval-call', text: `${call.method ?? ''} ${call.url ?? ''}` })),
    h('dl', { class: 'inline' }, facts.map(([name, value]) => [h('dt', { text: name }), h('dd', {}, value)])),
    approval.arguments !== undefined ? pre(approval.arguments) : h('p', { class: 'hint', text: 'No arguments.' }),
    h('div', { class: 'row' }, reason, buttons));
}

/// Approves or denies `approval`, shows how it went, and lists again.
async function decide(approval, action, reason, buttons) {
  for (const button of buttons) button.disabled = true;
  const id = String(approval.id ?? '');
  const name = String(approval.tool ?? id);
  outcome(h('p', { class: 'hint', text: `${action === 'approve' ? 'Approving (and running)' : 'Denying'} ${name}…` }));
  const text = reason.trim();
  const answer = await ask(`${APPROVALS}/${encodeURIComponent(id)}/${action}`, {
    method: 'POST',
    body: JSON.stringify(text ? { reason: text } : {}),
  });
  const decided = answer.status === 200 && isObject(answer.body) ? answer.body : null;
  if (decided) {
    const status = isObject(decided.response) ? decided.response.status : undefined;
    outcome(h('p', { 'data-state': String(decided.state ?? '') },
      h('span', { class: decided.state === 'approved' ? 'ok' : 'bad', text: `${name}: ${decided.state ?? '?'}` }),
      status !== undefined ? `, the call answered ${status}` : '',
      typeof decided.reason === 'string' ? ` (reason: ${decided.reason})` : ''));
  } else {
    outcome(h('p', { class: 'error', 'data-state': 'refused', text: `${name} was not ${action === 'approve' ? 'approved' : 'denied'}: ${failure(answer)}` }));
  }
  await refreshApprovals();
}

// ---------------------------------------------------------------------------------------
// A call of one's own that waits for approval.

/// Whether a `202` body is an approval.
export function isApproval(body) {
  return isObject(body) && typeof body.id === 'string' && typeof body.state === 'string';
}

const HEADINGS = {
  pending: 'Waiting for approval',
  approved: 'Approved',
  denied: 'Denied: the call was not run',
  expired: 'Expired: nobody approved the call in time, and it was not run',
};

/// The approval of a held call, and a button that reads it again at `location` (its
/// `Location`, with the same credentials): once approved and run, the call's answer.
export function heldView(approval, location) {
  const heading = h('h3');
  const facts = h('dl', { class: 'facts' });
  const final = h('div', { class: 'approval-final' });
  const show = (doc) => {
    const state = String(doc.state ?? '');
    heading.textContent = HEADINGS[state] ?? `Approval ${state}`;
    const rows = [
      ['state', state], ['approval', doc.id], ['decided by', doc.decided_by], ['reason', doc.reason],
      ['expires', doc.state === 'pending' ? when(doc.expires_at) : undefined],
    ].filter(([, value]) => value !== undefined && value !== null);
    facts.replaceChildren(...rows.flatMap(([name, value]) => [
      h('dt', { text: name }), h('dd', { 'data-approval-fact': name }, value),
    ]));
    final.replaceChildren();
    if (state === 'pending') {
      final.append(h('p', { class: 'hint', text: 'An approver decides it (in the Approvals panel, for credentials that may); then check again.' }));
    } else if (state === 'approved' && isObject(doc.response)) {
      const { status, body } = doc.response;
      final.append(doc.response.body_omitted
        ? h('p', { class: 'hint', text: `The call answered ${status}; its body was not kept.` })
        : answerView({ status, body: body ?? '' }));
    } else if (state === 'approved') {
      final.append(h('p', { class: 'hint', text: 'The call runs; check again for its answer.' }));
    }
  };
  const check = h('button', { type: 'button', id: 'check-approval', text: 'Check again' });
  check.addEventListener('click', async () => {
    check.disabled = true;
    const answer = await ask(location);
    check.disabled = false;
    if (answer.status === 200 && isApproval(answer.body)) show(answer.body);
    else final.replaceChildren(h('p', { class: 'error', text: `The approval could not be read (${failure(answer)}).` }));
  });
  show(approval);
  return h('section', { id: 'approval-wait', class: 'held' }, heading, facts, h('div', { class: 'actions' }, check), final);
}

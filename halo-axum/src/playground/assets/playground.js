// The HALO playground: lists the tools the caller may see, shows their schemas, builds a form
// from each tool's input and calls it, showing streamed events as they arrive. Approvals (the
// panel, and a call held for one) are in approvals.js.
//
// Everything the API sends is untrusted text: it reaches the page through `textContent` and
// attribute setters only, never as HTML. The credentials live in `state.credentials` and go
// nowhere but the `Authorization` header of requests to the API's origin.

import { heldView, isApproval, refreshApprovals, resetApprovals } from './approvals.js';

const HALO = 'application/llm+json';
const EVENT_STREAM = 'text/event-stream';
/// How much of an answer that is neither JSON nor events is shown.
const TEXT_LIMIT = 64 * 1024;
/// How often a dropped stream is resumed before giving up, and the first pause (doubled
/// each time).
const RESUME_ATTEMPTS = 5;
const RESUME_DELAY_MS = 200;

const api = apiBase(document.querySelector('meta[name="halo-api-base"]')?.content);

const state = {
  /// The `Authorization` value typed in, or ''.
  credentials: '',
  /// An API key typed in (`value`, or ''), and the header it goes in.
  apiKey: { header: 'X-API-Key', value: '' },
  /// The unfiltered manifest for these credentials: its tags make the filter.
  manifest: null,
  /// The tags selected; the server filters by them.
  tags: new Set(),
  /// The name of the tool shown, if any.
  selected: null,
  /// Bumped by every discovery, selection and call, so an answer that arrives late is
  /// dropped instead of overwriting a newer one.
  generation: { list: 0, tool: 0 },
  /// The call running, if any.
  call: null,
};

// ---------------------------------------------------------------------------------------
// DOM helpers: text only.

/// An element with attributes (set as attributes or properties, never as HTML) and children
/// (nodes, or strings that become text).
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name === 'text') element.textContent = value;
    else if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name in element && typeof value !== 'string') element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function $(id) {
  return document.getElementById(id);
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

export function pre(value, className = 'json') {
  return h('pre', { class: className, text: typeof value === 'string' ? value : json(value) });
}

// ---------------------------------------------------------------------------------------
// Where the API is, and requests to it.

/// The API's base from the page's configuration: its origin and its path without a trailing
/// slash.
function apiBase(text) {
  const url = new URL(text || '/', window.location.origin);
  return { origin: url.origin, prefix: url.origin + url.pathname.replace(/\/+$/, '') };
}

/// The URL of a path of the API (a manifest `url`, a placed target). An absolute URL must stay
/// on the API's origin: credentials never go anywhere else.
export function apiUrl(path) {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(path)) {
    const url = new URL(path);
    if (url.origin !== api.origin) {
      throw new Error(`${path} is not on the API's origin (${api.origin}); the playground does not call it`);
    }
    return url;
  }
  return new URL(api.prefix + (path.startsWith('/') ? path : `/${path}`));
}

/// Headers for a request to the API, with the credentials when there are some.
export function apiHeaders(accept) {
  const headers = new Headers();
  if (state.credentials) {
    try {
      headers.set('Authorization', state.credentials);
    } catch {
      // The value is never echoed: it is a secret.
      throw new Error('the credentials cannot be sent as a header value (a line break or another control character?)');
    }
  }
  if (state.apiKey.value) {
    try {
      headers.set(state.apiKey.header, state.apiKey.value);
    } catch {
      throw new Error(`the API key cannot be sent in a header named ${JSON.stringify(state.apiKey.header)} (is the name a header name, and the key free of line breaks?)`);
    }
  }
  headers.set('Accept', accept);
  return headers;
}

/// The names of the headers that carry credentials, for saying so without their values.
function credentialHeaders() {
  return [
    state.credentials ? 'Authorization' : null,
    state.apiKey.value ? state.apiKey.header : null,
  ].filter(Boolean);
}

/// A discovery request: the parsed document when `200`, otherwise an error that carries the
/// answer.
async function discover(path, query = '') {
  const url = apiUrl(path);
  url.search = query;
  const response = await fetch(url, {
    method: 'OPTIONS',
    headers: apiHeaders(HALO),
    cache: 'no-store',
    redirect: 'manual',
  });
  const answer = await readAnswer(response);
  if (response.status !== 200 || typeof answer.body !== 'object') {
    const error = new Error(`OPTIONS ${url.pathname}${url.search} answered ${statusText(response)}`);
    error.answer = answer;
    throw error;
  }
  return answer.body;
}

/// A whole answer read: JSON (problems included) parsed, anything else as text.
async function readAnswer(response) {
  const type = response.headers.get('content-type') || '';
  if (response.type === 'opaqueredirect') {
    return { status: 0, type, body: 'the API answered with a redirect, which the playground does not follow' };
  }
  const text = await response.text();
  if (/^application\/([a-z0-9.+-]*\+)?json\b/i.test(type.trim()) && text.trim() !== '') {
    try {
      return { status: response.status, type, body: JSON.parse(text) };
    } catch {
      // Shown as the text it is.
    }
  }
  return { status: response.status, type, body: text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}…` : text };
}

function statusText(response) {
  if (response.type === 'opaqueredirect') return 'a redirect';
  return `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
}

/// Whether a parsed body is problem details (RFC 9457).
export function isProblem(body) {
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    && (typeof body.status === 'number' || typeof body.title === 'string');
}

// ---------------------------------------------------------------------------------------
// The tool list.

async function refresh() {
  const generation = ++state.generation.list;
  const errorBox = $('discovery-error');
  errorBox.hidden = true;
  errorBox.replaceChildren();
  try {
    const manifest = await discover('/');
    if (generation !== state.generation.list) return;
    state.manifest = manifest;
    const known = new Set(tagsOf(manifest));
    for (const tag of [...state.tags]) if (!known.has(tag)) state.tags.delete(tag);
    showApi(manifest);
    showTags(known);
    const listed = state.tags.size === 0
      ? manifest
      : await discover('/', `tags=${[...state.tags].map(encodeURIComponent).join(',')}`);
    if (generation !== state.generation.list) return;
    showTools(Array.isArray(listed.tools) ? listed.tools : []);
  } catch (error) {
    if (generation !== state.generation.list) return;
    state.manifest = null;
    showTags(new Set());
    showTools([]);
    $('api').textContent = `${api.prefix}/`;
    errorBox.hidden = false;
    errorBox.append(h('p', { text: error.message }));
    if (error.answer) errorBox.append(answerView(error.answer));
  }
}

function tagsOf(manifest) {
  const tags = new Set();
  for (const tool of Array.isArray(manifest.tools) ? manifest.tools : []) {
    for (const tag of Array.isArray(tool.tags) ? tool.tags : []) {
      if (typeof tag === 'string') tags.add(tag);
    }
  }
  return [...tags].sort();
}

function showApi(manifest) {
  const name = typeof manifest.api === 'string' ? manifest.api : 'API';
  const version = typeof manifest.version === 'string' ? ` ${manifest.version}` : '';
  $('api').replaceChildren(
    h('strong', { text: `${name}${version}` }),
    ' at ',
    h('code', { text: `${api.prefix}/` }),
    typeof manifest.description === 'string' ? h('span', { class: 'api-description', text: manifest.description }) : null,
  );
  $('caller').textContent = credentialHeaders().length > 0
    ? 'Listing what these credentials may call.'
    : 'No credentials: listing what anyone may call.';
}

function showTags(tags) {
  const chips = [...tags].map((tag) => h('button', {
    type: 'button',
    class: 'chip',
    'data-tag': tag,
    'aria-pressed': state.tags.has(tag) ? 'true' : 'false',
    text: tag,
    onclick: () => {
      if (state.tags.has(tag)) state.tags.delete(tag);
      else state.tags.add(tag);
      refresh();
    },
  }));
  if (state.tags.size > 0) {
    chips.push(h('button', {
      type: 'button', class: 'chip quiet', id: 'clear-tags', text: 'all tools',
      onclick: () => { state.tags.clear(); refresh(); },
    }));
  }
  $('tags').replaceChildren(...chips);
}

function showTools(tools) {
  $('tool-count').textContent = `(${tools.length})`;
  const items = tools.filter((tool) => tool && typeof tool === 'object').map((tool) => {
    const name = String(tool.name ?? '');
    return h('li', {},
      h('button', {
        type: 'button',
        class: name === state.selected ? 'tool selected' : 'tool',
        'data-tool': name,
        onclick: () => select(tool),
      },
      h('span', { class: `method m-${String(tool.method).toLowerCase()}`, text: String(tool.method ?? '') }),
      h('span', { class: 'tool-name', text: name }),
      tool.kind === 'agent' ? h('span', { class: 'badge', text: 'agent' }) : null,
      h('span', { class: 'tool-url', text: String(tool.url ?? '') }),
      h('span', { class: 'tool-description', text: String(tool.description ?? '') })));
  });
  $('tools').replaceChildren(...items);
  if (tools.length === 0) {
    $('tools').append(h('li', { class: 'empty', text: 'No tools.' }));
  }
  // The tool shown stays when it is still listed (other credentials, another filter).
  const still = tools.find((tool) => tool?.name === state.selected);
  if (state.selected !== null && !still) clearDetail();
}

function clearDetail() {
  state.selected = null;
  state.generation.tool++;
  state.call?.abort();
  $('detail').replaceChildren(h('p', { class: 'empty', text: 'Choose a tool to read its schema and try it.' }));
}

// ---------------------------------------------------------------------------------------
// One tool: its schema, its form, its calls.

async function select(tool) {
  const generation = ++state.generation.tool;
  state.call?.abort();
  state.selected = String(tool.name ?? '');
  for (const button of document.querySelectorAll('#tools .tool')) {
    button.classList.toggle('selected', button.dataset.tool === state.selected);
  }
  const detail = $('detail');
  detail.replaceChildren(h('p', { class: 'empty', text: `Reading the schema of ${state.selected}…` }));
  try {
    const schemas = await discover(String(tool.url ?? ''));
    if (generation !== state.generation.tool) return;
    const list = Array.isArray(schemas) ? schemas : [schemas];
    const method = String(tool.method ?? '').toUpperCase();
    const schema = list.find((s) => String(s?.call?.method ?? '').toUpperCase() === method) ?? list[0];
    if (!schema || typeof schema !== 'object') throw new Error(`no schema for ${method} ${tool.url}`);
    detail.replaceChildren(...toolView(tool, schema));
  } catch (error) {
    if (generation !== state.generation.tool) return;
    detail.replaceChildren(h('div', { class: 'error' },
      h('p', { text: error.message }),
      error.answer ? answerView(error.answer) : null));
  }
}

function toolView(tool, schema) {
  const method = String(schema.call?.method ?? tool.method ?? 'GET').toUpperCase();
  const template = String(schema.call?.url ?? tool.url ?? '/');
  const input = isObject(schema.input) ? schema.input : {};
  const view = [];
  view.push(h('header', { class: 'tool-head' },
    h('h2', {},
      h('span', { class: `method m-${method.toLowerCase()}`, text: method }), ' ',
      h('span', { id: 'tool-title', text: String(schema.title ?? tool.name ?? '') })),
    h('code', { class: 'tool-url', text: template }),
    tagList(schema.tags ?? tool.tags)));
  if (schema.status && schema.status !== 'active') {
    view.push(h('p', { class: 'warning', text: lifecycle(schema) }));
  }
  if (typeof schema.why === 'string') {
    view.push(h('section', { class: 'why' }, h('h3', { text: 'Why' }), h('p', { id: 'tool-why', text: schema.why })));
  }
  if (typeof schema.description === 'string') {
    view.push(h('section', {}, h('h3', { text: 'Description' }), h('p', { class: 'text', text: schema.description })));
  }
  const facts = [
    ['auth', schema.auth], ['effects', schema.effects], ['limits', schema.limits],
    ['resilience', schema.resilience], ['stream', schema.stream], ['next', schema.next],
    ['trust', schema.trust], ['observe', schema.observe],
  ].filter(([, value]) => value !== undefined && value !== null);
  if (facts.length > 0) {
    view.push(h('section', {}, h('h3', { text: 'Behaviour' }),
      h('dl', { class: 'facts' }, facts.map(([name, value]) => [
        h('dt', { text: name }), h('dd', {}, factView(value)),
      ]))));
  }
  view.push(h('details', { class: 'schemas' },
    h('summary', { text: 'Input and output schemas' }),
    h('h4', { text: 'input' }), pre(input),
    schema.output !== undefined ? [h('h4', { text: 'output' }), pre(schema.output)] : null,
    Array.isArray(schema.examples) && schema.examples.length > 0 ? [h('h4', { text: 'examples' }), pre(schema.examples)] : null));
  view.push(callView(tool, schema, method, template, input));
  return view;
}

function lifecycle(schema) {
  let text = `This tool is ${schema.status}`;
  if (schema.sunset) text += `, until ${schema.sunset}`;
  if (schema.replace_with) text += `; use ${schema.replace_with} instead`;
  return `${text}.`;
}

function tagList(tags) {
  if (!Array.isArray(tags) || tags.length === 0) return null;
  return h('ul', { class: 'tag-list' }, tags.map((tag) => h('li', { text: String(tag) })));
}

function factView(value) {
  if (isObject(value)) {
    return h('dl', { class: 'inline' }, Object.entries(value).map(([key, inner]) => [
      h('dt', { text: key }), h('dd', { text: typeof inner === 'string' ? inner : JSON.stringify(inner) }),
    ]));
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------
// The form, from the input entries.

/// What kind of control an input entry gets.
function kindOf(schema) {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return 'enum';
  if (Object.hasOwn(schema, 'const')) return 'enum';
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t) => t && t !== 'null');
  if (types.length === 1 && ['integer', 'number', 'boolean', 'string'].includes(types[0])) return types[0];
  return 'json';
}

/// The schema an entry stands for: a `$ref` followed into the entry's own `$defs`, else into
/// those the tool's schemas share (`shared`), the keywords beside it kept (shared types are
/// served once, under `$defs`).
function resolved(entry, shared) {
  const own = isObject(entry.$defs) ? entry.$defs : {};
  const tool = isObject(shared) ? shared : {};
  let schema = entry;
  for (let hops = 0; hops < 32 && typeof schema.$ref === 'string' && schema.$ref.startsWith('#/$defs/'); hops++) {
    const name = schema.$ref.slice('#/$defs/'.length).replaceAll('~1', '/').replaceAll('~0', '~');
    const defs = Object.hasOwn(own, name) ? own : tool;
    const target = Object.hasOwn(defs, name) ? defs[name] : null;
    if (!isObject(target)) break;
    const { $ref, ...beside } = schema;
    schema = { ...target, ...beside };
  }
  return schema;
}

/// One control per input entry (`shared`: the tool's shared `$defs`). `read()` gives
/// `undefined` (not sent) or the value, or throws a message; `write(value)` fills the control.
function field(name, entry, index, shared) {
  const schema = isObject(entry) ? resolved(entry, shared) : {};
  const kind = kindOf(schema);
  const required = schema.required === true;
  const id = `field-${index}`;
  const where = typeof schema.in === 'string' ? schema.in : '';
  let control;
  let read;
  let write;
  let extra = null;
  switch (kind) {
    case 'integer':
    case 'number': {
      control = h('input', { type: 'number', step: kind === 'integer' ? '1' : 'any', inputmode: kind === 'integer' ? 'numeric' : 'decimal' });
      if (typeof schema.minimum === 'number') control.setAttribute('min', String(schema.minimum));
      if (typeof schema.maximum === 'number') control.setAttribute('max', String(schema.maximum));
      read = () => {
        if (control.validity.badInput) throw `\`${name}\` is not a number`;
        const text = control.value.trim();
        if (text === '') return undefined;
        const number = Number(text);
        if (!Number.isFinite(number)) throw `\`${name}\` is not a number`;
        return number;
      };
      write = (value) => { control.value = typeof value === 'number' ? String(value) : ''; };
      break;
    }
    case 'boolean': {
      control = h('input', { type: 'checkbox' });
      // An optional boolean is sent only once it has been set; "unset" takes it back.
      let touched = required;
      if (!required) {
        control.indeterminate = true;
        control.addEventListener('change', () => { touched = true; unset.hidden = false; });
        const unset = h('button', { type: 'button', class: 'quiet small', hidden: true, text: 'unset',
          onclick: () => { touched = false; control.checked = false; control.indeterminate = true; unset.hidden = true; } });
        extra = unset;
        write = (value) => { touched = typeof value === 'boolean'; control.indeterminate = !touched; control.checked = value === true; unset.hidden = !touched; };
      } else {
        write = (value) => { control.checked = value === true; };
      }
      read = () => (touched ? control.checked : undefined);
      break;
    }
    case 'enum': {
      const values = Array.isArray(schema.enum) && schema.enum.length > 0 ? schema.enum : [schema.const];
      control = h('select', {},
        h('option', { value: '', text: required ? '— choose —' : '— not sent —' }),
        values.map((value, i) => h('option', { value: String(i), text: typeof value === 'string' ? value : JSON.stringify(value) })));
      read = () => (control.value === '' ? undefined : values[Number(control.value)]);
      write = (value) => {
        const i = values.findIndex((candidate) => JSON.stringify(candidate) === JSON.stringify(value));
        control.value = i < 0 ? '' : String(i);
      };
      break;
    }
    case 'string': {
      control = h('input', { type: 'text', spellcheck: 'false' });
      read = () => (control.value === '' ? undefined : control.value);
      write = (value) => { control.value = typeof value === 'string' ? value : ''; };
      break;
    }
    default: {
      control = h('textarea', { rows: 4, spellcheck: 'false', class: 'json-input' });
      read = () => {
        const text = control.value.trim();
        if (text === '') return undefined;
        try {
          return JSON.parse(text);
        } catch (error) {
          throw `\`${name}\` is not valid JSON: ${error.message}`;
        }
      };
      write = (value) => { control.value = value === undefined ? '' : json(value); };
    }
  }
  control.id = id;
  control.setAttribute('data-field', name);
  control.setAttribute('data-kind', kind);
  if (required) control.setAttribute('aria-required', 'true');
  const example = schema.example ?? schema.default;
  if (example !== undefined && 'placeholder' in control && kind !== 'boolean') {
    control.placeholder = typeof example === 'string' ? example : JSON.stringify(example);
  }
  const hints = [
    kind === 'json' ? 'JSON' : String(Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type ?? ''),
    typeof schema.format === 'string' ? schema.format : null,
    typeof schema.minimum === 'number' ? `≥ ${schema.minimum}` : null,
    typeof schema.maximum === 'number' ? `≤ ${schema.maximum}` : null,
    typeof schema.pattern === 'string' ? `pattern ${schema.pattern}` : null,
  ].filter(Boolean).join(', ');
  const row = h('div', { class: 'field' },
    h('label', { for: id },
      h('span', { class: 'field-name', text: name }),
      required ? h('span', { class: 'required', title: 'required', text: ' *' }) : null,
      where ? h('span', { class: 'where', text: where }) : null,
      hints ? h('span', { class: 'hint', text: hints }) : null),
    h('div', { class: 'control' }, control, extra),
    typeof schema.description === 'string' ? h('p', { class: 'hint', text: schema.description }) : null);
  return {
    name,
    row,
    write,
    read() {
      const value = read();
      if (value === undefined && required) throw `\`${name}\` is required`;
      return value;
    },
  };
}

function callView(tool, schema, method, template, input) {
  const fields = Object.entries(input).map(([name, entry], i) => field(name, entry, i, schema.$defs));
  const example = Array.isArray(schema.examples) ? schema.examples.find((e) => isObject(e?.input)) : undefined;
  const streams = h('input', { type: 'checkbox', id: 'stream', checked: true });
  const output = h('section', { id: 'output', class: 'output' });
  const invoke = h('button', { type: 'submit', id: 'invoke', class: 'primary', text: 'Invoke' });
  const cancel = h('button', { type: 'button', id: 'cancel', class: 'quiet', text: 'Cancel', disabled: true,
    onclick: () => state.call?.abort() });
  const form = h('form', { id: 'call-form', class: 'call', novalidate: true, autocomplete: 'off' },
    h('h3', { text: 'Try it' }),
    fields.length === 0 ? h('p', { class: 'hint', text: 'This tool takes no input.' }) : fields.map((f) => f.row),
    h('div', { class: 'actions' },
      invoke, cancel,
      h('label', { class: 'toggle' }, streams, ` Stream events (Accept: ${EVENT_STREAM})`),
      example ? h('button', { type: 'button', class: 'quiet', id: 'use-example', text: 'Fill from example',
        onclick: () => { for (const f of fields) f.write(example.input[f.name]); } }) : null));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    call({ tool, schema, method, template, fields, stream: streams.checked, output, invoke, cancel });
  });
  return h('div', {}, form, output);
}

// ---------------------------------------------------------------------------------------
// Placing arguments, as halo-protocol's `place_arguments` does.

/// Bytes escaped in a path segment: controls, non-ASCII, and these.
const SEGMENT_ESCAPED = ' "#%/<>?[\\]^`{|}';

function encodeSegment(text) {
  let out = '';
  for (const byte of new TextEncoder().encode(text)) {
    const char = String.fromCharCode(byte);
    if (byte < 0x20 || byte >= 0x7f || SEGMENT_ESCAPED.includes(char)) {
      out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    } else {
      out += char;
    }
  }
  return out;
}

function kindName(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return { boolean: 'a boolean', number: 'a number', string: 'a string' }[typeof value] ?? 'an object';
}

function scalar(name, location, value) {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw `\`${name}\` goes in the ${location} and must be a string, number or boolean, not ${kindName(value)}`;
}

function isTemplateVariable(template, name) {
  return template.split('{').slice(1).some((rest) => {
    const end = rest.indexOf('}');
    return end >= 0 && rest.slice(0, end).replace(/^\*+/, '') === name;
  });
}

const WHOLE_BODY_NAMES = ['body', 'request_body', '_body'];

/// Whether `name` stands for the whole body: the only body entry, named as servers name it.
function isWholeBody(input, name) {
  const bodies = Object.entries(input).filter(([, entry]) => entry?.in === 'body');
  return bodies.length === 1 && bodies[0][0] === name && WHOLE_BODY_NAMES.includes(name);
}

function fillTemplate(template, values) {
  let out = '';
  let rest = template;
  const leaves = (segment) => segment === '.' || segment === '..';
  for (;;) {
    const start = rest.indexOf('{');
    if (start < 0) break;
    const length = rest.slice(start).indexOf('}');
    if (length < 0) break;
    const raw = rest.slice(start + 1, start + length);
    const name = raw.replace(/^\*+/, '');
    if (!values.has(name)) throw `missing path parameter \`${name}\``;
    const value = values.get(name);
    out += rest.slice(0, start);
    if (raw.startsWith('*')) {
      if (value.split('/').some(leaves)) throw `path parameter \`${name}\` may not contain \`.\` or \`..\` segments`;
      out += value.split('/').map(encodeSegment).join('/');
    } else {
      if (value === '' || leaves(value)) throw `path parameter \`${name}\` may not be empty, \`.\` or \`..\``;
      out += encodeSegment(value);
    }
    rest = rest.slice(start + length + 1);
  }
  return out + rest;
}

/// Places `args` (`[name, value]` pairs) for a call of `method` on `template`: the target
/// path, query pairs, headers and body (`{json}` or `{raw, contentType}`), or throws why not.
function place(template, method, input, args) {
  const is = (name) => method.toUpperCase() === name;
  const pathValues = new Map();
  const query = [];
  let headers = [];
  const body = [];
  let whole;
  for (const [name, value] of args) {
    const entry = Object.hasOwn(input, name) ? input[name] : undefined;
    let location = typeof entry?.in === 'string' ? entry.in : undefined;
    if (location === undefined) {
      if (isTemplateVariable(template, name)) location = 'path';
      else if (is('GET') || is('HEAD') || is('DELETE')) location = 'query';
      else location = 'body';
    }
    if (location === 'path') {
      pathValues.set(name, scalar(name, 'path', value));
    } else if (location === 'query') {
      if (value === null) continue;
      for (const item of Array.isArray(value) ? value : [value]) query.push([name, scalar(name, 'query', item)]);
    } else if (location === 'header') {
      if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) throw `\`${name}\` is not a valid header name`;
      const text = scalar(name, 'header', value);
      if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(text)) throw `\`${name}\` holds characters a header cannot carry`;
      headers = headers.filter(([taken]) => taken.toLowerCase() !== name.toLowerCase());
      headers.push([name, text]);
    } else if (isWholeBody(input, name)) {
      whole = { value, contentType: typeof entry?.contentMediaType === 'string' ? entry.contentMediaType : undefined };
    } else {
      body.push([name, value]);
    }
  }
  const target = fillTemplate(template, pathValues);
  const expectsBody = (is('POST') || is('PUT') || is('PATCH'))
    && Object.values(input).some((entry) => entry?.in === 'body');
  let payload;
  if (whole !== undefined) {
    payload = typeof whole.value === 'string' && whole.contentType
      ? { raw: whole.value, contentType: whole.contentType }
      : { json: whole.value };
  } else if (body.length > 0) {
    // Own properties even for names like `__proto__`.
    payload = { json: Object.fromEntries(body) };
  } else if (expectsBody) {
    payload = { json: {} };
  }
  return { target, query, headers, payload };
}

// ---------------------------------------------------------------------------------------
// Calling a tool.

async function call({ tool, method, template, schema, fields, stream, output, invoke, cancel }) {
  const input = isObject(schema.input) ? schema.input : {};
  output.replaceChildren();
  const errors = [];
  const args = [];
  for (const f of fields) {
    try {
      const value = f.read();
      if (value !== undefined) args.push([f.name, value]);
    } catch (message) {
      errors.push(String(message));
    }
  }
  let placed;
  if (errors.length === 0) {
    try {
      placed = place(template, method, input, args);
    } catch (message) {
      errors.push(String(message));
    }
  }
  let url;
  if (placed) {
    try {
      url = apiUrl(placed.target);
      for (const [name, value] of placed.query) url.searchParams.append(name, value);
    } catch (error) {
      errors.push(error.message);
    }
  }
  if (errors.length > 0) {
    output.append(h('div', { id: 'input-errors', class: 'error' },
      h('p', { text: 'Not sent:' }), h('ul', {}, errors.map((message) => h('li', { text: message })))));
    return;
  }

  state.call?.abort();
  const controller = new AbortController();
  state.call = controller;
  const generation = state.generation.tool;
  const current = () => generation === state.generation.tool && state.call === controller;
  let headers;
  let requestBody;
  try {
    headers = apiHeaders(stream ? EVENT_STREAM : 'application/json');
    for (const [name, value] of placed.headers) {
      try {
        headers.set(name, value);
      } catch {
        throw new Error(`\`${name}\` holds characters a header cannot carry`);
      }
    }
    if (placed.payload?.raw !== undefined) {
      headers.set('Content-Type', placed.payload.contentType);
      requestBody = placed.payload.raw;
    } else if (placed.payload) {
      headers.set('Content-Type', 'application/json');
      requestBody = JSON.stringify(placed.payload.json);
    }
    headers.set('Accept', stream ? EVENT_STREAM : 'application/json');
  } catch (error) {
    output.append(h('div', { id: 'input-errors', class: 'error' }, h('p', { text: `Not sent: ${error.message}` })));
    return;
  }

  output.append(h('section', { id: 'request', class: 'request' },
    h('h3', { text: 'Request' }),
    h('code', { text: `${method} ${url.pathname}${url.search}` }),
    credentialHeaders().length > 0
      ? h('span', { class: 'hint', text: ` with ${credentialHeaders().join(' and ')} (hidden)` })
      : null,
    requestBody !== undefined ? pre(requestBody) : null));
  const status = h('p', { id: 'status', class: 'status', text: 'Calling…' });
  const events = h('ol', { id: 'events', class: 'events' });
  const result = h('div', { id: 'result-area' });
  output.append(status, events, result);
  invoke.disabled = true;
  cancel.disabled = false;
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method,
      headers,
      body: requestBody,
      signal: controller.signal,
      cache: 'no-store',
      redirect: 'manual',
    });
    const callId = response.headers.get('halo-call-id');
    const type = response.headers.get('content-type') || '';
    status.replaceChildren(
      h('span', { class: response.ok ? 'ok' : 'bad', text: statusText(response) }),
      type ? ` · ${type}` : '',
      callId ? h('span', { text: ` · call ${callId}` }) : null);
    if (response.ok && type.toLowerCase().startsWith(EVENT_STREAM) && response.body) {
      const ended = await readCall(response.body, {
        url, method, headers, body: requestBody, signal: controller.signal, callId, events, result, current,
      });
      if (current() && !ended) {
        result.append(h('p', { class: 'warning', text: 'The stream ended before a final event.' }));
      }
    } else {
      const answer = await readAnswer(response);
      if (current() && response.status === 202 && isApproval(answer.body)) {
        // Held until an approver decides (§10.3.2): shown as such, and listed for approvers.
        result.append(heldView(answer.body, response.headers.get('location') || String(answer.body.href ?? '')));
        refreshApprovals();
      } else if (current()) {
        result.append(answerView(answer));
      }
    }
    if (current()) status.append(` · ${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    if (!current() && error.name === 'AbortError') return;
    status.replaceChildren(h('span', { class: 'bad', text: error.name === 'AbortError' ? 'Cancelled.' : `The request failed: ${error.message}` }));
  } finally {
    if (state.call === controller) {
      state.call = null;
      invoke.disabled = false;
      cancel.disabled = true;
    }
  }
}

/// Reads a streamed call to its end, showing each event once. A stream that breaks (or ends)
/// before its final event is resumed as a HALO client does: the same request again with
/// `Last-Event-ID` and `Halo-Call-Id`, so the call is not run again and the server sends what
/// was missed. True when the final event came; an answer that refuses the resumption (`410`
/// when the call's events are gone) is shown as the result.
async function readCall(body, call) {
  const { events, result, current } = call;
  let callId = call.callId;
  let lastId = 0;
  let ended = false;
  const onEvent = (event) => {
    if (!current()) return;
    const id = Number(event.id);
    if (Number.isSafeInteger(id) && id > 0) {
      if (id <= lastId) return; // sent again after a resumption
      lastId = id;
    }
    if (!callId && event.type === 'tool_start') {
      try {
        const start = JSON.parse(event.data);
        callId = start?.data?.call_id ?? start?.call_id ?? null;
      } catch {
        // Not JSON: shown as it is, and not resumable.
      }
    }
    ended = showEvent(event, events, result) || ended;
  };
  for (let attempt = 1; ; attempt += 1) {
    let broken = null;
    try {
      await readEvents(body, onEvent);
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      broken = error;
    }
    if (ended || !current()) return ended;
    if (!callId || typeof callId !== 'string' || attempt > RESUME_ATTEMPTS) return false;
    events.append(h('li', { class: 'event e-resume', 'data-event': 'resume' },
      h('span', { class: 'event-id', text: '' }),
      h('span', { class: 'event-type', text: 'reconnecting' }),
      h('span', { class: 'event-summary', text: `${broken ? 'the connection broke' : 'the stream ended early'}; resuming after #${lastId} (attempt ${attempt} of ${RESUME_ATTEMPTS})` })));
    await pause(RESUME_DELAY_MS * 2 ** (attempt - 1), call.signal);
    const headers = new Headers(call.headers);
    headers.set('Last-Event-ID', String(lastId));
    headers.set('Halo-Call-Id', callId);
    let response;
    try {
      response = await fetch(call.url, {
        method: call.method,
        headers,
        body: call.body,
        signal: call.signal,
        cache: 'no-store',
        redirect: 'manual',
      });
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      body = emptyStream();
      continue;
    }
    const type = (response.headers.get('content-type') || '').toLowerCase();
    if (!response.ok || !type.startsWith(EVENT_STREAM) || !response.body) {
      const answer = await readAnswer(response);
      if (current()) result.append(answerView(answer));
      return true;
    }
    body = response.body;
  }
}

/// Waits `ms`, or until `signal` aborts.
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new DOMException('cancelled', 'AbortError'));
    }, { once: true });
  });
}

/// A body with no events, for an attempt whose request failed outright.
function emptyStream() {
  return new ReadableStream({ start: (controller) => controller.close() });
}

/// Shows one event of a stream; true when it ends the call.
function showEvent(event, list, result) {
  let envelope;
  try {
    envelope = JSON.parse(event.data);
  } catch {
    envelope = { type: event.type, data: event.data };
  }
  const type = typeof envelope?.type === 'string' ? envelope.type : event.type;
  const data = isObject(envelope) && 'data' in envelope ? envelope.data : envelope;
  const item = h('li', { class: `event e-${type}`, 'data-event': type },
    h('span', { class: 'event-id', text: event.id ? `#${event.id}` : '' }),
    h('span', { class: 'event-type', text: type }));
  let terminal = false;
  switch (type) {
    case 'tool_start':
    case 'agent_start':
      item.append(h('span', { class: 'event-summary', text: [data?.tool, data?.call_id].filter(Boolean).join(' · ') || JSON.stringify(data) }));
      if (isObject(data?.arguments)) item.append(pre(data.arguments));
      break;
    case 'approval_pending':
      item.append(h('span', { class: 'event-summary', text: `waiting for approval · ${data?.id ?? '?'} · ${data?.state ?? '?'}` }));
      refreshApprovals();
      break;
    case 'tool_progress': {
      const step = data?.step;
      const total = data?.total;
      const parts = [];
      if (typeof step === 'number') parts.push(typeof total === 'number' ? `${step}/${total}` : String(step));
      if (typeof data?.message === 'string') parts.push(data.message);
      item.append(h('span', { class: 'event-summary', text: parts.join(' · ') || JSON.stringify(data) }));
      if (typeof step === 'number' && typeof total === 'number' && total > 0) {
        item.append(h('progress', { max: total, value: Math.min(step, total) }));
      }
      break;
    }
    case 'llm_chunk': {
      let answer = $('llm-text');
      if (!answer) {
        answer = h('p', { id: 'llm-text', class: 'text' });
        result.append(h('h3', { text: 'Answer' }), answer);
      }
      answer.append(typeof data?.delta === 'string' ? data.delta : typeof data?.text === 'string' ? data.text : '');
      return false;
    }
    case 'tool_end':
      item.append(h('span', { class: 'event-summary', text: `status ${data?.status ?? '?'}` }));
      if (!isAgentStream(list)) {
        terminal = true;
        result.append(h('section', { id: 'result', class: 'result' },
          h('h3', { text: `Result (status ${data?.status ?? '?'})` }),
          pre(data?.content ?? null),
          data?.meta !== undefined ? [h('h4', { text: 'meta (for user interfaces)' }), pre(data.meta)] : null));
      } else if (data?.content !== undefined) {
        item.append(pre(data.content));
      }
      break;
    case 'agent_end':
      terminal = true;
      item.append(h('span', { class: 'event-summary', text: 'done' }));
      result.append(h('section', { id: 'result', class: 'result' }, h('h3', { text: 'Result' }), pre(data)));
      break;
    case 'tool_error':
    case 'agent_error':
      terminal = !isAgentStream(list) || type === 'agent_error';
      item.append(h('span', { class: 'event-summary', text: `${data?.status ?? ''} ${data?.title ?? ''}`.trim() }));
      if (terminal) result.append(problemView(data));
      else item.append(pre(data));
      break;
    default:
      item.append(h('span', { class: 'event-summary', text: JSON.stringify(data) }));
  }
  list.append(item);
  return terminal;
}

/// Whether the stream is an agent's run, whose `tool_*` events are its tools' calls rather
/// than the end of the call.
function isAgentStream(list) {
  return list.querySelector('li.e-agent_start') !== null;
}

/// A whole answer: problem details, JSON, or text.
export function answerView(answer) {
  if (isProblem(answer.body)) return problemView(answer.body, answer.status);
  return h('section', { id: 'result', class: 'result' },
    h('h3', { text: answer.status ? `Answer (status ${answer.status})` : 'Answer' }),
    answer.body === '' ? h('p', { class: 'hint', text: 'No content.' }) : pre(answer.body, typeof answer.body === 'string' ? 'text' : 'json'));
}

/// Problem details (RFC 9457), every field as text.
function problemView(problem, status) {
  const body = isObject(problem) ? problem : { detail: String(problem) };
  const rows = [];
  const add = (name, value) => {
    if (value !== undefined && value !== null && value !== '') rows.push(h('dt', { text: name }), h('dd', { 'data-problem': name, text: String(value) }));
  };
  add('status', body.status ?? status);
  add('title', body.title);
  add('detail', body.detail);
  if (body.type && body.type !== 'about:blank') add('type', body.type);
  add('instance', body.instance);
  const errors = Array.isArray(body.errors) ? body.errors : [];
  return h('section', { id: 'problem', class: 'problem' },
    h('h3', { text: `Problem${body.status ?? status ? ` (status ${body.status ?? status})` : ''}` }),
    h('dl', { class: 'facts' }, rows),
    errors.length > 0 ? h('table', { class: 'errors' },
      h('thead', {}, h('tr', {}, h('th', { text: 'pointer' }), h('th', { text: 'message' }))),
      h('tbody', {}, errors.map((error) => h('tr', {},
        h('td', {}, h('code', { text: String(error?.pointer ?? '') })),
        h('td', { text: String(error?.message ?? JSON.stringify(error)) }))))) : null);
}

// ---------------------------------------------------------------------------------------
// Server-sent events from a fetch body (EventSource can neither POST nor send headers).

async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data = [];
  let type = '';
  let id = '';
  const line = (text) => {
    if (text === '') {
      if (data.length > 0) onEvent({ type: type || 'message', data: data.join('\n'), id });
      data = [];
      type = '';
      return;
    }
    if (text.startsWith(':')) return; // a comment: keep-alive
    const colon = text.indexOf(':');
    const name = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data.push(value);
    else if (name === 'event') type = value;
    else if (name === 'id' && !value.includes('\0')) id = value;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (;;) {
      const end = /\r\n|\r|\n/.exec(buffer);
      if (!end) break;
      // A lone CR at the end may be the first half of a CRLF split across chunks.
      if (end[0] === '\r' && end.index === buffer.length - 1) break;
      line(buffer.slice(0, end.index));
      buffer = buffer.slice(end.index + end[0].length);
    }
  }
  if (buffer.endsWith('\r')) line(buffer.slice(0, -1));
  // An event not ended by a blank line is dropped, as EventSource does.
}

// ---------------------------------------------------------------------------------------
// Start.

$('credentials-form').addEventListener('submit', (event) => {
  event.preventDefault();
  state.credentials = $('credentials').value.trim();
  state.apiKey = {
    header: $('api-key-header').value.trim() || 'X-API-Key',
    value: $('api-key').value.trim(),
  };
  refresh();
  resetApprovals();
});
$('forget').addEventListener('click', () => {
  $('credentials').value = '';
  $('api-key').value = '';
  state.credentials = '';
  state.apiKey = { ...state.apiKey, value: '' };
  refresh();
  resetApprovals();
});
$('approvals-refresh').addEventListener('click', () => refreshApprovals());
refresh();
refreshApprovals();

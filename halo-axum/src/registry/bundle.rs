//! Bundling `$ref`s into self-contained JSON Schemas, in time and memory linear in the
//! document.
//!
//! OpenAPI generators write `{"$ref": "#/components/schemas/Book"}` wherever a named type
//! appears. A served schema must stand alone, so each one carries the definitions it reaches
//! under its own `$defs`, each definition once however often it is used and however cyclic
//! the references are. A definition is written inline instead where that is smaller or
//! clearer: where the document uses it once, or where it is a tiny leaf (`{"type":
//! "string", "format": "date-time"}`), and never where it is recursive.
//!
//! Every decision is made once per document, so a definition reads the same in every
//! schema and is serialised once: the served schemas share those bytes
//! ([`Bundler::defs_rope`]). Each referenced target is walked once; there is no expansion
//! along paths of the reference graph, which is what made a cyclic document explode.

use std::cell::RefCell;
use std::collections::HashMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::rope::Rope;
use crate::DocumentLimits;

/// Nested deeper than this inside its site, a definition used once stays in `$defs`: inlining
/// must not make a schema much deeper than its document.
const MAX_INLINE_DEPTH: usize = 32;

/// A definition whose bundled body serialises to at most this many bytes (and holds no
/// reference) is copied to its uses: `{"$ref":"#/$defs/timestamp"}` is not shorter.
const TINY: usize = 48;

/// Why a schema could not be bundled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A reference that points nowhere in the document (or outside it).
    Unresolved(String),
    /// A limit of [`DocumentLimits`] was passed at a pointer.
    Limit {
        /// Where: a JSON Pointer into the document, or into the operation's schema.
        at: String,
        /// Which limit: the name of the [`DocumentLimits`] setter.
        limit: &'static str,
        /// Its value.
        value: usize,
    },
    /// References that lead only to each other, with no schema among them.
    EmptyCycle(String),
}

/// What a schema that is a reference to a recursive definition becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// The reference, the definition under `$defs` once: the smallest.
    Reference,
    /// The definition's body, as for any other definition: for a request body, whose
    /// properties become input entries.
    Body,
}

/// A referenced target, identified by its index.
type Id = u32;

#[derive(Debug)]
struct Target<'d> {
    reference: &'d str,
    body: &'d Value,
    /// How many references name it, over every schema walked.
    uses: u32,
    /// The targets its body references (with repeats).
    edges: Vec<Id>,
    /// Set once its body is bundled.
    done: Option<Done>,
    /// Its name under `$defs`, once some schema refers to it there.
    name: Option<String>,
    /// `"name":{…}`, serialised on first use.
    piece: Option<Rope>,
}

#[derive(Debug)]
struct Done {
    /// The body with every reference rewritten or inlined.
    body: Value,
    /// Part of a reference cycle (itself included).
    recursive: bool,
    /// Copied to its uses instead of referred to.
    inline: bool,
    /// How deeply its bundled body nests.
    depth: usize,
    /// The definitions its bundled body refers to (`#/$defs/...`), each once.
    deps: Vec<Id>,
}

#[derive(Debug, Default)]
struct State<'d> {
    targets: Vec<Target<'d>>,
    by_reference: HashMap<&'d str, Id>,
    by_name: HashMap<String, Id>,
    /// Definitions referenced by `$defs` across every schema served so far.
    defs_served: usize,
}

/// Bundles the schemas of one OpenAPI document.
#[derive(Debug)]
pub(crate) struct Bundler<'d> {
    document: &'d Value,
    limits: DocumentLimits,
    state: RefCell<State<'d>>,
}

impl<'d> Bundler<'d> {
    pub(crate) fn new(document: &'d Value, limits: DocumentLimits) -> Self {
        Self {
            document,
            limits,
            state: RefCell::new(State::default()),
        }
    }

    /// Counts the references of a schema that [`schema`](Self::schema) will bundle later,
    /// so that what is used once is known before anything is written.
    pub(crate) fn survey(&self, schema: &'d Value) -> Result<(), Problem> {
        let mut state = self.state.borrow_mut();
        let mut found = Vec::new();
        self.references(schema, 0, &mut found)
            .map_err(|e| e.at_root())?;
        self.intern_all(&mut state, found, None)
    }

    /// The value a local reference (`#/components/...`) points at.
    fn lookup(&self, reference: &str) -> Result<&'d Value, Problem> {
        reference
            .strip_prefix('#')
            .and_then(|pointer| pointer_lookup(self.document, pointer))
            .ok_or_else(|| Problem::Unresolved(reference.to_owned()))
    }

    /// Follows a chain of references to a parameter, request body or response object.
    pub(crate) fn follow(&self, mut value: &'d Value) -> Result<&'d Value, Problem> {
        for _ in 0..MAX_INLINE_DEPTH {
            match reference_of(value) {
                Some(reference) => value = self.lookup(reference)?,
                None => return Ok(value),
            }
        }
        Err(Problem::Unresolved(
            reference_of(value).unwrap_or_default().to_owned(),
        ))
    }

    /// `schema` with its references rewritten: each a `{"$ref": "#/$defs/Name"}` into the
    /// document's definitions, or inlined where that is smaller or clearer. A schema that is
    /// a reference itself is the body it names, unless the definition is recursive and
    /// `root` is [`Root::Reference`]: then its body would be written twice, at the root and
    /// under `$defs`. [`defs_of`](Self::defs_of) gives the `$defs` it needs.
    pub(crate) fn schema(&self, schema: &'d Value, root: Root) -> Result<Value, Problem> {
        let mut state = self.state.borrow_mut();
        let mut found = Vec::new();
        self.references(schema, 0, &mut found)
            .map_err(|e| e.at_root())?;
        // Anything not surveyed before is taken in now, counted as it is found.
        let unknown: Vec<&'d str> = found
            .into_iter()
            .filter(|reference| !state.by_reference.contains_key(reference))
            .collect();
        self.intern_all(&mut state, unknown, None)?;
        self.finish(&mut state)?;
        let mut deps = Vec::new();
        let whole = reference_of(schema).filter(|reference| {
            let id = state.by_reference[reference];
            let done = state.targets[id as usize].done.as_ref().expect("finished");
            root == Root::Body || !done.recursive
        });
        let root = match whole {
            Some(reference) => {
                let id = state.by_reference[reference];
                let mut body = state.targets[id as usize]
                    .done
                    .as_ref()
                    .expect("finished")
                    .body
                    .clone();
                if let (Value::Object(body), Value::Object(siblings)) = (&mut body, schema) {
                    for (key, value) in siblings.iter().filter(|(key, _)| *key != "$ref") {
                        let value = rewrite(&mut state, value, key, 1, &mut deps);
                        body.insert(key.clone(), value);
                    }
                }
                body
            }
            None => rewrite_value(&mut state, schema, 0, &mut deps),
        };
        Ok(root)
    }

    /// The definitions `schema` (as [`schema`](Self::schema) gave it) reaches, each once, in
    /// the order they are first reached.
    pub(crate) fn defs_of(&self, schema: &Value) -> Vec<u32> {
        let state = self.state.borrow();
        let mut direct = Vec::new();
        defs_refs(&state, schema, &mut direct);
        let mut seen = vec![false; state.targets.len()];
        let mut order = Vec::new();
        let mut stack: Vec<Id> = direct.into_iter().rev().collect();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id as usize], true) {
                continue;
            }
            order.push(id);
            let done = state.targets[id as usize].done.as_ref().expect("finished");
            stack.extend(done.deps.iter().rev().filter(|dep| !seen[**dep as usize]));
        }
        order
    }

    /// `{"Name":{…},…}`: the `$defs` object of `defs`, from bytes shared by every schema.
    ///
    /// Every entry served counts towards [`DocumentLimits::max_defs`].
    pub(crate) fn defs_rope(&self, defs: &[u32]) -> Result<Rope, Problem> {
        let mut state = self.state.borrow_mut();
        state.defs_served += defs.len();
        if state.defs_served > self.limits.max_defs {
            return Err(Problem::Limit {
                at: String::new(),
                limit: "max_defs",
                value: self.limits.max_defs,
            });
        }
        let mut parts = Vec::with_capacity(defs.len() * 2 + 1);
        parts.push(Rope::from_static(b"{"));
        for (i, &id) in defs.iter().enumerate() {
            if i > 0 {
                parts.push(Rope::from_static(b","));
            }
            parts.push(piece(&mut state, id));
        }
        parts.push(Rope::from_static(b"}"));
        Ok(Rope::join(parts))
    }

    /// `defs` as a `$defs` object of values, for code that needs the whole schema (the
    /// validators).
    pub(crate) fn defs_value(&self, defs: &[u32]) -> Map<String, Value> {
        let mut state = self.state.borrow_mut();
        defs.iter()
            .map(|&id| {
                let name = name_of(&mut state, id);
                let body = state.targets[id as usize].done.as_ref().expect("finished");
                (name, body.body.clone())
            })
            .collect()
    }

    /// Interns the references in `found` and, transitively, everything their bodies
    /// reference; `from` is the target whose body they were found in.
    fn intern_all(
        &self,
        state: &mut State<'d>,
        found: Vec<&'d str>,
        from: Option<Id>,
    ) -> Result<(), Problem> {
        let mut pending: Vec<(Option<Id>, Vec<&'d str>)> = vec![(from, found)];
        while let Some((from, found)) = pending.pop() {
            for reference in found {
                let id = match state.by_reference.get(reference) {
                    Some(&id) => id,
                    None => {
                        let body = self.lookup(reference)?;
                        let id = Id::try_from(state.targets.len()).map_err(|_| Problem::Limit {
                            at: reference.to_owned(),
                            limit: "max_defs",
                            value: self.limits.max_defs,
                        })?;
                        state.targets.push(Target {
                            reference,
                            body,
                            uses: 0,
                            edges: Vec::new(),
                            done: None,
                            name: None,
                            piece: None,
                        });
                        state.by_reference.insert(reference, id);
                        let mut inner = Vec::new();
                        self.references(body, 0, &mut inner)
                            .map_err(|e| e.at(reference))?;
                        pending.push((Some(id), inner));
                        id
                    }
                };
                let target = &mut state.targets[id as usize];
                target.uses = target.uses.saturating_add(1);
                if let Some(from) = from {
                    state.targets[from as usize].edges.push(id);
                }
            }
        }
        Ok(())
    }

    /// Collects the references of a schema (not those inside instance data), checking its
    /// depth on the way.
    fn references(
        &self,
        value: &'d Value,
        depth: usize,
        found: &mut Vec<&'d str>,
    ) -> Result<(), Deep> {
        if depth > self.limits.max_depth {
            return Err(Deep::new(self.limits.max_depth));
        }
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    if key == "$ref" {
                        if let Value::String(reference) = inner {
                            found.push(reference);
                        }
                    } else if !holds_data(key) {
                        self.references(inner, depth + 1, found)
                            .map_err(|e| e.push(key))?;
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.references(item, depth + 1, found)
                        .map_err(|e| e.push(&i.to_string()))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Bundles every target not bundled yet, strongly connected components first (Tarjan's
    /// algorithm, without recursion: reference chains can be as long as the document).
    fn finish(&self, state: &mut State<'d>) -> Result<(), Problem> {
        let count = state.targets.len();
        let mut index: Vec<Option<u32>> = vec![None; count];
        let mut low = vec![0u32; count];
        let mut on_stack = vec![false; count];
        let mut stack: Vec<Id> = Vec::new();
        let mut next = 0u32;
        for start in 0..count {
            if state.targets[start].done.is_some() || index[start].is_some() {
                continue;
            }
            // (node, next edge to look at)
            let mut calls: Vec<(Id, usize)> = vec![(start as Id, 0)];
            index[start] = Some(next);
            low[start] = next;
            next += 1;
            stack.push(start as Id);
            on_stack[start] = true;
            while let Some(&mut (node, ref mut edge)) = calls.last_mut() {
                let n = node as usize;
                if let Some(&child) = state.targets[n].edges.get(*edge) {
                    *edge += 1;
                    let c = child as usize;
                    if state.targets[c].done.is_some() {
                        continue;
                    }
                    match index[c] {
                        None => {
                            index[c] = Some(next);
                            low[c] = next;
                            next += 1;
                            stack.push(child);
                            on_stack[c] = true;
                            calls.push((child, 0));
                        }
                        Some(seen) if on_stack[c] => low[n] = low[n].min(seen),
                        Some(_) => {}
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(parent, _)) = calls.last() {
                    let p = parent as usize;
                    low[p] = low[p].min(low[n]);
                }
                if Some(low[n]) == index[n] {
                    let mut component = Vec::new();
                    loop {
                        let member = stack.pop().expect("on the stack");
                        on_stack[member as usize] = false;
                        component.push(member);
                        if member == node {
                            break;
                        }
                    }
                    self.bundle_component(state, &component)?;
                }
            }
        }
        Ok(())
    }

    /// Bundles one strongly connected component, whose references out of it are bundled.
    fn bundle_component(&self, state: &mut State<'d>, component: &[Id]) -> Result<(), Problem> {
        let recursive = component.len() > 1 || {
            let only = component[0];
            state.targets[only as usize].edges.contains(&only)
        };
        if recursive
            && component
                .iter()
                .all(|&id| is_bare_reference(state.targets[id as usize].body))
        {
            return Err(Problem::EmptyCycle(
                state.targets[component[0] as usize].reference.to_owned(),
            ));
        }
        // Members refer to each other through `$defs`; mark them before any body is written.
        for &id in component {
            state.targets[id as usize].done = Some(Done {
                body: Value::Null,
                recursive,
                inline: false,
                depth: 0,
                deps: Vec::new(),
            });
        }
        for &id in component {
            let source = state.targets[id as usize].body;
            let mut deps = Vec::new();
            let body = rewrite_value(state, source, 0, &mut deps);
            let depth = depth_of(&body);
            let inline = !recursive
                && (state.targets[id as usize].uses <= 1 || (deps.is_empty() && is_tiny(&body)));
            let done = state.targets[id as usize].done.as_mut().expect("marked");
            *done = Done {
                body,
                recursive,
                inline,
                depth,
                deps,
            };
        }
        Ok(())
    }
}

/// The value with its references rewritten, at `depth` inside its schema.
fn rewrite_value(state: &mut State<'_>, value: &Value, depth: usize, deps: &mut Vec<Id>) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = match map.get("$ref") {
                Some(Value::String(reference)) => {
                    let id = state.by_reference[reference.as_str()];
                    let done = state.targets[id as usize].done.as_ref().expect("bundled");
                    if done.inline && depth + done.depth <= MAX_INLINE_DEPTH {
                        for dep in &done.deps {
                            if !deps.contains(dep) {
                                deps.push(*dep);
                            }
                        }
                        match done.body.clone() {
                            Value::Object(body) => body,
                            // A boolean schema inlined beside other keywords: keep the
                            // reference, it cannot take siblings.
                            _ if map.len() > 1 => reference_to(state, id, deps),
                            other => return other,
                        }
                    } else {
                        reference_to(state, id, deps)
                    }
                }
                _ => Map::with_capacity(map.len()),
            };
            // OpenAPI 3.1 allows keywords beside `$ref` (a field's description, default, ...).
            for (key, inner) in map.iter().filter(|(key, _)| *key != "$ref") {
                let inner = rewrite(state, inner, key, depth + 1, deps);
                out.insert(key.clone(), inner);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| rewrite_value(state, item, depth + 1, deps))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The value of keyword `key`: copied as it is when it holds instance data.
fn rewrite(
    state: &mut State<'_>,
    value: &Value,
    key: &str,
    depth: usize,
    deps: &mut Vec<Id>,
) -> Value {
    if holds_data(key) {
        value.clone()
    } else {
        rewrite_value(state, value, depth, deps)
    }
}

/// `{"$ref": "#/$defs/Name"}`, recording the dependency.
fn reference_to(state: &mut State<'_>, id: Id, deps: &mut Vec<Id>) -> Map<String, Value> {
    if !deps.contains(&id) {
        deps.push(id);
    }
    let name = name_of(state, id);
    let mut out = Map::new();
    out.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
    out
}

/// The definition's name under `$defs`: the last token of its pointer, made a plain name,
/// unique in the document.
fn name_of(state: &mut State<'_>, id: Id) -> String {
    if let Some(name) = &state.targets[id as usize].name {
        return name.clone();
    }
    let reference = state.targets[id as usize].reference;
    let base = reference.rsplit('/').next().unwrap_or("schema");
    let base = halo_protocol::unescape_token(base);
    let mut base: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base.push_str("schema");
    }
    let mut name = base.clone();
    let mut n = 2;
    while state.by_name.contains_key(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    state.by_name.insert(name.clone(), id);
    state.targets[id as usize].name = Some(name.clone());
    name
}

/// `"Name":{…}`, serialised once.
fn piece(state: &mut State<'_>, id: Id) -> Rope {
    if let Some(piece) = &state.targets[id as usize].piece {
        return piece.clone();
    }
    let name = name_of(state, id);
    let target = &mut state.targets[id as usize];
    let body = &target.done.as_ref().expect("bundled").body;
    let mut bytes = serde_json::to_vec(&name).expect("a string serialises");
    bytes.push(b':');
    serde_json::to_writer(&mut bytes, body).expect("a JSON value serialises");
    let piece = Rope::from(Bytes::from(bytes));
    target.piece = Some(piece.clone());
    piece
}

/// The definitions a bundled schema refers to directly, in the order written.
fn defs_refs(state: &State<'_>, value: &Value, found: &mut Vec<Id>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match inner {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(id) = reference
                            .strip_prefix("#/$defs/")
                            .and_then(|name| state.by_name.get(name))
                            && !found.contains(id)
                        {
                            found.push(*id);
                        }
                    }
                    _ if holds_data(key) => {}
                    _ => defs_refs(state, inner, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| defs_refs(state, item, found)),
        _ => {}
    }
}

/// How deeply a value nests (a scalar: 0).
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether a value serialises to at most [`TINY`] bytes.
fn is_tiny(value: &Value) -> bool {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > TINY {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter(0), value).is_ok()
}

/// A schema that is only a reference (`{"$ref": …}`, perhaps with annotations).
fn is_bare_reference(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        map.contains_key("$ref")
            && map.keys().all(|key| {
                matches!(
                    key.as_str(),
                    "$ref" | "description" | "title" | "summary" | "$comment"
                )
            })
    })
}

/// A schema nested too deeply, and the path to it, gathered on the way up.
#[derive(Debug)]
struct Deep {
    tokens: Vec<String>,
    limit: usize,
}

impl Deep {
    fn new(limit: usize) -> Self {
        Self {
            tokens: Vec::new(),
            limit,
        }
    }

    fn push(mut self, token: &str) -> Self {
        self.tokens
            .push(halo_protocol::escape_token(token).into_owned());
        self
    }

    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for token in self.tokens.iter().rev() {
            pointer.push('/');
            pointer.push_str(token);
        }
        pointer
    }

    /// Inside the document, under `reference`.
    fn at(self, reference: &str) -> Problem {
        Problem::Limit {
            at: format!("{reference}{}", self.pointer()),
            limit: "max_depth",
            value: self.limit,
        }
    }

    /// Inside the operation's own schema.
    fn at_root(self) -> Problem {
        Problem::Limit {
            at: format!("schema{}", self.pointer()),
            limit: "max_depth",
            value: self.limit,
        }
    }
}

/// `Value::pointer` without allocating for tokens that need no unescaping.
fn pointer_lookup<'v>(document: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut target = document;
    if pointer.is_empty() {
        return Some(target);
    }
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = halo_protocol::unescape_token(token);
        target = match target {
            Value::Object(map) => map.get(token.as_ref())?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(target)
}

/// The `$ref` of a reference object.
fn reference_of(value: &Value) -> Option<&str> {
    value.get("$ref").and_then(Value::as_str)
}

/// Keywords whose values are instance data, never schemas, so a `$ref` key inside them is
/// data too.
fn holds_data(keyword: &str) -> bool {
    halo_protocol::is_data_keyword(keyword) || keyword == "x-halo-examples"
}

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
use std::collections::{HashMap, HashSet};

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

/// Which way a schema describes data: what a caller sends, or what it gets back. Properties
/// marked `readOnly` are left out of input, `writeOnly` ones out of output, so a definition
/// can read two ways, each bundled once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Input = 0,
    Output = 1,
}

/// How one schema is rewritten.
#[derive(Debug, Clone, Copy)]
struct Pass {
    direction: Direction,
    /// The document is OpenAPI 3.0, whose `nullable` becomes JSON Schema's `null` type.
    nullable: bool,
}

impl Pass {
    fn at(self) -> usize {
        self.direction as usize
    }
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
    /// Set once its body is bundled, for each [`Direction`].
    done: [Option<Done>; 2],
    /// Its name under `$defs`, once some schema refers to it there.
    name: Option<String>,
    /// `"name":{…}`, serialised on first use, for each [`Direction`].
    piece: [Option<Rope>; 2],
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

/// Definition ids in the order first met, each once.
#[derive(Debug, Default)]
struct Ids {
    list: Vec<Id>,
    seen: HashSet<Id>,
}

impl Ids {
    fn add(&mut self, id: Id) {
        if self.seen.insert(id) {
            self.list.push(id);
        }
    }
}

#[derive(Debug, Default)]
struct State<'d> {
    targets: Vec<Target<'d>>,
    by_reference: HashMap<&'d str, Id>,
    by_name: HashMap<String, Id>,
    /// Targets interned since the last bundling, for each [`Direction`].
    unfinished: [Vec<Id>; 2],
    /// The next suffix to try for a name already taken (`Name_2`, `Name_3`, …).
    suffixes: HashMap<String, usize>,
    /// Definitions referenced by `$defs` across every schema served so far.
    defs_served: usize,
}

/// Bundles the schemas of one OpenAPI document.
#[derive(Debug)]
pub(crate) struct Bundler<'d> {
    document: &'d Value,
    limits: DocumentLimits,
    /// OpenAPI 3.0 (`nullable`), rather than 3.1 (JSON Schema as it is).
    openapi_30: bool,
    state: RefCell<State<'d>>,
}

impl<'d> Bundler<'d> {
    pub(crate) fn new(document: &'d Value, limits: DocumentLimits) -> Self {
        let version = document.get("openapi").and_then(Value::as_str);
        Self {
            document,
            limits,
            openapi_30: version.is_some_and(|version| version.starts_with("3.0")),
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
    pub(crate) fn schema(
        &self,
        schema: &'d Value,
        root: Root,
        direction: Direction,
    ) -> Result<Value, Problem> {
        let pass = Pass {
            direction,
            nullable: self.openapi_30,
        };
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
        self.finish(&mut state, pass)?;
        let mut deps = Ids::default();
        let whole = reference_of(schema).filter(|reference| {
            let id = state.by_reference[reference];
            root == Root::Body || !done(&state, id, pass).recursive
        });
        let root = match whole {
            Some(reference) => {
                let id = state.by_reference[reference];
                let mut body = done(&state, id, pass).body.clone();
                if let (Value::Object(body), Value::Object(siblings)) = (&mut body, schema) {
                    for (key, value) in siblings.iter().filter(|(key, _)| *key != "$ref") {
                        if let Some(value) = rewrite(&mut state, value, key, 1, &mut deps, pass) {
                            body.insert(key.clone(), value);
                        }
                    }
                    adjust(&state, body, pass);
                }
                body
            }
            None => rewrite_value(&mut state, schema, 0, &mut deps, pass),
        };
        Ok(root)
    }

    /// The definitions `schema` (as [`schema`](Self::schema) gave it) reaches, each once, in
    /// the order they are first reached.
    pub(crate) fn defs_of(&self, schema: &Value, direction: Direction) -> Vec<u32> {
        let mut direct = Ids::default();
        defs_refs(&self.state.borrow(), schema, &mut direct);
        self.closure(direct, direction)
    }

    /// [`defs_of`](Self::defs_of) for a schema given as its keywords.
    pub(crate) fn defs_of_map(
        &self,
        schema: &Map<String, Value>,
        direction: Direction,
    ) -> Vec<u32> {
        let mut direct = Ids::default();
        let state = self.state.borrow();
        defs_refs_map(&state, schema, &mut direct);
        drop(state);
        self.closure(direct, direction)
    }

    /// The definitions reached from `direct`, each once, in the order first reached.
    fn closure(&self, direct: Ids, direction: Direction) -> Vec<u32> {
        let state = self.state.borrow();
        let mut seen = vec![false; state.targets.len()];
        let mut order = Vec::new();
        let mut stack: Vec<Id> = direct.list.into_iter().rev().collect();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id as usize], true) {
                continue;
            }
            order.push(id);
            let done = state.targets[id as usize].done[direction as usize]
                .as_ref()
                .expect("finished");
            stack.extend(done.deps.iter().rev().filter(|dep| !seen[**dep as usize]));
        }
        order
    }

    /// `{"Name":{…},…}`: the `$defs` object of `defs`, from bytes shared by every schema.
    ///
    /// Every entry served counts towards [`DocumentLimits::max_defs`].
    pub(crate) fn defs_rope(&self, defs: &[u32], direction: Direction) -> Result<Rope, Problem> {
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
            parts.push(piece(&mut state, id, direction));
        }
        parts.push(Rope::from_static(b"}"));
        Ok(Rope::join(parts))
    }

    /// `defs` as a `$defs` object of values, for code that needs the whole schema (the
    /// validators).
    pub(crate) fn defs_value(&self, defs: &[u32], direction: Direction) -> Map<String, Value> {
        let mut state = self.state.borrow_mut();
        defs.iter()
            .map(|&id| {
                let name = name_of(&mut state, id);
                let body = state.targets[id as usize].done[direction as usize]
                    .as_ref()
                    .expect("finished");
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
                            done: [None, None],
                            name: None,
                            piece: [None, None],
                        });
                        state.by_reference.insert(reference, id);
                        for unfinished in &mut state.unfinished {
                            unfinished.push(id);
                        }
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
        self.references_in(value, Keys::Keywords, depth, found)
    }

    /// [`references`](Self::references) of a value whose object keys are `keys`.
    fn references_in(
        &self,
        value: &'d Value,
        keys: Keys,
        depth: usize,
        found: &mut Vec<&'d str>,
    ) -> Result<(), Deep> {
        if depth > self.limits.max_depth {
            return Err(Deep::new(self.limits.max_depth));
        }
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match keys.read(key) {
                        Read::Reference => {
                            if let Value::String(reference) = inner {
                                found.push(reference);
                            }
                        }
                        Read::Data | Read::Extension => {}
                        Read::Schema(inner_keys) => self
                            .references_in(inner, inner_keys, depth + 1, found)
                            .map_err(|e| e.push(key))?,
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.references_in(item, Keys::Keywords, depth + 1, found)
                        .map_err(|e| e.push(&i.to_string()))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Bundles every target not bundled yet, strongly connected components first (Tarjan's
    /// algorithm, without recursion: reference chains can be as long as the document).
    fn finish(&self, state: &mut State<'d>, pass: Pass) -> Result<(), Problem> {
        let at = pass.at();
        let starts = std::mem::take(&mut state.unfinished[at]);
        if starts.is_empty() {
            return Ok(());
        }
        let count = state.targets.len();
        let mut index: Vec<Option<u32>> = vec![None; count];
        let mut low = vec![0u32; count];
        let mut on_stack = vec![false; count];
        let mut stack: Vec<Id> = Vec::new();
        let mut next = 0u32;
        for start in starts {
            let start = start as usize;
            if state.targets[start].done[at].is_some() || index[start].is_some() {
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
                    if state.targets[c].done[at].is_some() {
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
                    self.bundle_component(state, &component, pass)?;
                }
            }
        }
        Ok(())
    }

    /// Bundles one strongly connected component, whose references out of it are bundled.
    fn bundle_component(
        &self,
        state: &mut State<'d>,
        component: &[Id],
        pass: Pass,
    ) -> Result<(), Problem> {
        let at = pass.at();
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
            state.targets[id as usize].done[at] = Some(Done {
                body: Value::Null,
                recursive,
                inline: false,
                depth: 0,
                deps: Vec::new(),
            });
        }
        for &id in component {
            let source = state.targets[id as usize].body;
            let mut deps = Ids::default();
            let body = rewrite_value(state, source, 0, &mut deps, pass);
            let depth = depth_of(&body);
            let inline = !recursive
                && (state.targets[id as usize].uses <= 1
                    || (deps.list.is_empty() && is_tiny(&body)));
            let done = state.targets[id as usize].done[at]
                .as_mut()
                .expect("marked");
            *done = Done {
                body,
                recursive,
                inline,
                depth,
                deps: deps.list,
            };
        }
        Ok(())
    }
}

/// The value with its references rewritten, at `depth` inside its schema.
fn rewrite_value(
    state: &mut State<'_>,
    value: &Value,
    depth: usize,
    deps: &mut Ids,
    pass: Pass,
) -> Value {
    rewrite_in(state, value, Keys::Keywords, depth, deps, pass)
}

/// [`rewrite_value`] of a value whose object keys are `keys`: under `properties` (names),
/// every key is kept and rewritten as a schema.
fn rewrite_in(
    state: &mut State<'_>,
    value: &Value,
    keys: Keys,
    depth: usize,
    deps: &mut Ids,
    pass: Pass,
) -> Value {
    match value {
        Value::Object(map) if keys == Keys::Names => Value::Object(
            map.iter()
                .map(|(name, inner)| {
                    let inner = rewrite_in(state, inner, Keys::Keywords, depth + 1, deps, pass);
                    (name.clone(), inner)
                })
                .collect(),
        ),
        Value::Object(map) => {
            let mut out = match map.get("$ref") {
                Some(Value::String(reference)) => {
                    let id = state.by_reference[reference.as_str()];
                    let done = done(state, id, pass);
                    if done.inline && depth + done.depth <= MAX_INLINE_DEPTH {
                        for &dep in &done.deps {
                            deps.add(dep);
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
                if let Some(inner) = rewrite(state, inner, key, depth + 1, deps, pass) {
                    out.insert(key.clone(), inner);
                }
            }
            adjust(state, &mut out, pass);
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| rewrite_value(state, item, depth + 1, deps, pass))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The value of keyword `key` of a schema: copied as it is when it holds instance data, left
/// out when it is a vendor extension (`x-…`: annotations for other tools, which say nothing
/// to a model or a validator, and may refer to anything in the document).
fn rewrite(
    state: &mut State<'_>,
    value: &Value,
    key: &str,
    depth: usize,
    deps: &mut Ids,
    pass: Pass,
) -> Option<Value> {
    match Keys::Keywords.read(key) {
        Read::Extension => None,
        Read::Data => Some(value.clone()),
        Read::Reference => Some(rewrite_value(state, value, depth, deps, pass)),
        Read::Schema(keys) => Some(rewrite_in(state, value, keys, depth, deps, pass)),
    }
}

/// The bundled body of a target in a pass.
fn done<'s>(state: &'s State<'_>, id: Id, pass: Pass) -> &'s Done {
    state.targets[id as usize].done[pass.at()]
        .as_ref()
        .expect("bundled before it is used")
}

/// The last touches on a schema object once its keywords are rewritten: properties that do
/// not go this way left out (`readOnly` from input, `writeOnly` from output), and, in an
/// OpenAPI 3.0 document, `nullable` said as JSON Schema does.
fn adjust(state: &State<'_>, schema: &mut Map<String, Value>, pass: Pass) {
    let flag = match pass.direction {
        Direction::Input => "readOnly",
        Direction::Output => "writeOnly",
    };
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        let before = properties.len();
        let mut dropped = Vec::new();
        properties.retain(|name, property| {
            let keep = !flagged(state, property, flag);
            if !keep {
                dropped.push(name.clone());
            }
            keep
        });
        if properties.len() < before
            && let Some(Value::Array(required)) = schema.get_mut("required")
        {
            required.retain(|name| {
                !name
                    .as_str()
                    .is_some_and(|n| dropped.iter().any(|d| d == n))
            });
        }
    }
    if pass.nullable {
        nullable(schema);
    }
    // `mapping` names schemas by their place in the document (`#/components/schemas/Cat`),
    // which a served schema does not have; the `oneOf` branches say the same.
    if let Some(Value::Object(discriminator)) = schema.get_mut("discriminator") {
        discriminator.remove("mapping");
    }
}

/// Whether a property's schema carries `flag: true`, itself or in the definition it refers to.
fn flagged(state: &State<'_>, schema: &Value, flag: &str) -> bool {
    if schema.get(flag) == Some(&Value::Bool(true)) {
        return true;
    }
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| state.by_name.get(name))
        .is_some_and(|&id| state.targets[id as usize].body.get(flag) == Some(&Value::Bool(true)))
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema: `null` added to `type` (and to `enum`),
/// or as one more alternative of `anyOf`/`oneOf`, or beside a reference or an `allOf`.
fn nullable(schema: &mut Map<String, Value>) {
    match schema.get("nullable") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            schema.remove("nullable");
            return;
        }
        _ => return,
    }
    schema.remove("nullable");
    let null = || Value::String("null".to_owned());
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            schema.insert(
                "type".to_owned(),
                Value::Array(vec![Value::String(single), null()]),
            );
            return;
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null()) {
                types.push(null());
            }
            return;
        }
        _ => {}
    }
    let null_schema = || {
        let mut map = Map::new();
        map.insert("type".to_owned(), null());
        Value::Object(map)
    };
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get_mut(union) {
            if !branches.contains(&null_schema()) {
                branches.push(null_schema());
            }
            return;
        }
    }
    // `{"$ref": …, "nullable": true}` or `{"allOf": […], "nullable": true}`: the schema or null.
    let mut alternative = Map::new();
    for keyword in ["$ref", "allOf"] {
        if let Some(value) = schema.remove(keyword) {
            alternative.insert(keyword.to_owned(), value);
        }
    }
    if !alternative.is_empty() {
        schema.insert(
            "anyOf".to_owned(),
            Value::Array(vec![Value::Object(alternative), null_schema()]),
        );
    }
}

/// `{"$ref": "#/$defs/Name"}`, recording the dependency.
fn reference_to(state: &mut State<'_>, id: Id, deps: &mut Ids) -> Map<String, Value> {
    deps.add(id);
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
    while state.by_name.contains_key(&name) {
        let next = state.suffixes.entry(base.clone()).or_insert(2);
        name = format!("{base}_{next}");
        *next += 1;
    }
    state.by_name.insert(name.clone(), id);
    state.targets[id as usize].name = Some(name.clone());
    name
}

/// `"Name":{…}`, serialised once.
fn piece(state: &mut State<'_>, id: Id, direction: Direction) -> Rope {
    let at = direction as usize;
    if let Some(piece) = &state.targets[id as usize].piece[at] {
        return piece.clone();
    }
    let name = name_of(state, id);
    let target = &mut state.targets[id as usize];
    let body = &target.done[at].as_ref().expect("bundled").body;
    let mut bytes = serde_json::to_vec(&name).expect("a string serialises");
    bytes.push(b':');
    serde_json::to_writer(&mut bytes, body).expect("a JSON value serialises");
    let piece = Rope::from(Bytes::from(bytes));
    target.piece[at] = Some(piece.clone());
    piece
}

/// The definitions a bundled schema refers to directly, in the order written.
fn defs_refs(state: &State<'_>, value: &Value, found: &mut Ids) {
    defs_refs_in(state, value, Keys::Keywords, found);
}

fn defs_refs_in(state: &State<'_>, value: &Value, keys: Keys, found: &mut Ids) {
    match value {
        Value::Object(map) => defs_refs_keys(state, map, keys, found),
        Value::Array(items) => items.iter().for_each(|item| defs_refs(state, item, found)),
        _ => {}
    }
}

fn defs_refs_map(state: &State<'_>, map: &Map<String, Value>, found: &mut Ids) {
    defs_refs_keys(state, map, Keys::Keywords, found);
}

fn defs_refs_keys(state: &State<'_>, map: &Map<String, Value>, keys: Keys, found: &mut Ids) {
    for (key, inner) in map {
        match (keys.read(key), inner) {
            (Read::Reference, Value::String(reference)) => {
                if let Some(id) = reference
                    .strip_prefix("#/$defs/")
                    .and_then(|name| state.by_name.get(name))
                {
                    found.add(*id);
                }
            }
            (Read::Reference | Read::Data | Read::Extension, _) => {}
            (Read::Schema(inner_keys), _) => defs_refs_in(state, inner, inner_keys, found),
        }
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

/// What the keys of a JSON object inside a schema are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// Keywords: the object is a schema (or a part of one, such as `discriminator`).
    Keywords,
    /// Names of properties or definitions, each naming a schema: a property may be called
    /// `default`, `enum` or `x-request-id` without being one.
    Names,
}

/// How one key of an object is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// `$ref`.
    Reference,
    /// Instance data (`example`, `enum`, `default`, ...): a `$ref` inside is data too.
    Data,
    /// A vendor extension (`x-…`), which is not served.
    Extension,
    /// A schema, or a value holding schemas, whose own keys are these.
    Schema(Keys),
}

impl Keys {
    fn read(self, key: &str) -> Read {
        match self {
            Self::Names => Read::Schema(Self::Keywords),
            Self::Keywords if key == "$ref" => Read::Reference,
            Self::Keywords if halo_protocol::is_data_keyword(key) => Read::Data,
            Self::Keywords if key.starts_with("x-") => Read::Extension,
            Self::Keywords => Read::Schema(
                if matches!(
                    key,
                    "properties"
                        | "patternProperties"
                        | "$defs"
                        | "definitions"
                        | "dependentSchemas"
                ) {
                    Self::Names
                } else {
                    Self::Keywords
                },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(document: &Value, schema: &Value, direction: Direction) -> Value {
        let bundler = Bundler::new(document, DocumentLimits::default());
        let mut out = bundler.schema(schema, Root::Reference, direction).unwrap();
        let defs = bundler.defs_of(&out, direction);
        if !defs.is_empty() {
            out.as_object_mut().unwrap().insert(
                "$defs".into(),
                Value::Object(bundler.defs_value(&defs, direction)),
            );
        }
        assert!(halo_protocol::is_self_contained(&out), "{out}");
        out
    }

    fn openapi(version: &str, schemas: Value) -> Value {
        json!({"openapi": version, "components": {"schemas": schemas}})
    }

    #[test]
    fn shared_definitions_once_single_uses_and_tiny_leaves_inline() {
        let doc = openapi(
            "3.1.0",
            json!({
                "Book": {"type": "object", "properties": {
                    "author": {"$ref": "#/components/schemas/Author"},
                    "editor": {"$ref": "#/components/schemas/Author"},
                    "isbn": {"$ref": "#/components/schemas/Isbn"},
                    "published": {"$ref": "#/components/schemas/Date"},
                    "revised": {"$ref": "#/components/schemas/Date"}}},
                "Author": {"type": "object", "description": "Who wrote it, with a long enough text",
                           "properties": {"name": {"type": "string"}}},
                "Isbn": {"type": "string", "description": "The book's ISBN-13, used once, so in place"},
                "Date": {"type": "string", "format": "date"}
            }),
        );
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/Book"}),
            Direction::Output,
        );
        let properties = &out["properties"];
        assert_eq!(properties["author"], json!({"$ref": "#/$defs/Author"}));
        assert_eq!(properties["editor"], json!({"$ref": "#/$defs/Author"}));
        assert_eq!(
            properties["isbn"]["description"],
            "The book's ISBN-13, used once, so in place"
        );
        assert_eq!(
            properties["published"],
            json!({"type": "string", "format": "date"})
        );
        assert_eq!(out["$defs"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn cycles_go_through_defs_once() {
        let doc = openapi(
            "3.1.0",
            json!({
                "Ping": {"type": "object", "properties": {"pong": {"$ref": "#/components/schemas/Pong"}}},
                "Pong": {"type": "object", "properties": {"ping": {"$ref": "#/components/schemas/Ping"}}}
            }),
        );
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/Ping"}),
            Direction::Output,
        );
        assert_eq!(out["$ref"], "#/$defs/Ping");
        let defs = out["$defs"].as_object().unwrap();
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["Ping", "Pong"]);
        assert_eq!(
            defs["Pong"]["properties"]["ping"],
            json!({"$ref": "#/$defs/Ping"})
        );
    }

    #[test]
    fn nullable_in_openapi_30_is_json_schema_null() {
        let doc = openapi(
            "3.0.3",
            json!({
                "Status": {"type": "string", "enum": ["on", "off"], "description": "an enum used twice"},
                "Thing": {"type": "object", "properties": {
                    "name": {"type": "string", "nullable": true},
                    "status": {"$ref": "#/components/schemas/Status"},
                    "again": {"$ref": "#/components/schemas/Status"},
                    "choice": {"anyOf": [{"type": "integer"}, {"type": "string"}], "nullable": true},
                    "wrapped": {"allOf": [{"$ref": "#/components/schemas/Status"}], "nullable": true},
                    "level": {"type": "string", "enum": ["a", "b"], "nullable": true},
                    "plain": {"type": "integer", "nullable": false},
                    "nullable": {"type": "boolean"}}}
            }),
        );
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/Thing"}),
            Direction::Output,
        );
        let p = &out["properties"];
        assert_eq!(p["name"], json!({"type": ["string", "null"]}));
        assert_eq!(p["choice"]["anyOf"][2], json!({"type": "null"}));
        assert_eq!(
            p["wrapped"],
            json!({"anyOf": [{"allOf": [{"$ref": "#/$defs/Status"}]}, {"type": "null"}]})
        );
        assert_eq!(
            p["level"],
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        assert_eq!(p["plain"], json!({"type": "integer"}));
        assert_eq!(
            p["nullable"],
            json!({"type": "boolean"}),
            "a property named nullable"
        );
        // 3.1 documents are JSON Schema already: `nullable` is not theirs to convert.
        let doc = openapi("3.1.0", json!({"N": {"type": "string", "nullable": true}}));
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/N"}),
            Direction::Output,
        );
        assert_eq!(out, json!({"type": "string", "nullable": true}));
    }

    #[test]
    fn read_only_is_not_asked_and_write_only_not_shown() {
        let doc = openapi(
            "3.0.3",
            json!({
                "Id": {"type": "integer", "readOnly": true, "description": "assigned by the server"},
                "User": {"type": "object", "required": ["id", "name", "password"], "properties": {
                    "id": {"$ref": "#/components/schemas/Id"},
                    "created": {"type": "string", "readOnly": true},
                    "name": {"type": "string"},
                    "password": {"type": "string", "writeOnly": true}}},
                "Team": {"type": "object", "properties": {
                    "lead": {"$ref": "#/components/schemas/User"},
                    "members": {"type": "array", "items": {"$ref": "#/components/schemas/User"}}}}
            }),
        );
        let team = json!({"$ref": "#/components/schemas/Team"});
        let input = bundle(&doc, &team, Direction::Input);
        let user = &input["$defs"]["User"];
        assert_eq!(user["required"], json!(["name", "password"]));
        let keys: Vec<&String> = user["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "password"]);
        let output = bundle(&doc, &team, Direction::Output);
        let user = &output["$defs"]["User"];
        assert_eq!(user["required"], json!(["id", "name"]));
        let mut keys: Vec<&String> = user["properties"].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["created", "id", "name"]);
    }

    #[test]
    fn discriminator_mappings_do_not_point_into_the_document() {
        let doc = openapi(
            "3.0.3",
            json!({
                "Cat": {"type": "object", "properties": {"kind": {"type": "string"}}},
                "Pet": {"oneOf": [{"$ref": "#/components/schemas/Cat"}],
                        "discriminator": {"propertyName": "kind",
                                          "mapping": {"cat": "#/components/schemas/Cat"}}}
            }),
        );
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/Pet"}),
            Direction::Output,
        );
        assert_eq!(out["discriminator"], json!({"propertyName": "kind"}));
        assert!(!out.to_string().contains("#/components/"));
    }

    #[test]
    fn properties_named_like_keywords_are_schemas_and_extensions_are_not_served() {
        let doc = openapi(
            "3.0.3",
            json!({
                "Order": {"type": "object", "x-resourceId": "order",
                          "x-expandableFields": ["customer"],
                          "properties": {
                    "default": {"$ref": "#/components/schemas/Customer"},
                    "enum": {"$ref": "#/components/schemas/Customer"},
                    "x-request-id": {"type": "string", "x-stripeBypassValidation": true},
                    "customer": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Customer"}],
                                 "x-expansionResources": {"oneOf": [{"$ref": "#/components/schemas/Hidden"}]}}}},
                "Customer": {"type": "object", "description": "Who ordered, with a long enough text",
                             "properties": {"name": {"type": "string"}}},
                "Hidden": {"type": "object", "description": "Only named by a vendor extension",
                           "properties": {"secret": {"type": "string"}}}
            }),
        );
        let out = bundle(
            &doc,
            &json!({"$ref": "#/components/schemas/Order"}),
            Direction::Output,
        );
        let text = out.to_string();
        // Properties called `default`, `enum` or `x-…` are schemas: their references resolve.
        assert_eq!(
            out["properties"]["default"],
            json!({"$ref": "#/$defs/Customer"}),
            "{out}"
        );
        assert_eq!(
            out["properties"]["enum"],
            json!({"$ref": "#/$defs/Customer"}),
            "{out}"
        );
        assert_eq!(
            out["properties"]["x-request-id"],
            json!({"type": "string"}),
            "{out}"
        );
        // Vendor extensions are not served, nor what only they refer to.
        assert!(
            !text.contains("x-resourceId") && !text.contains("x-expan"),
            "{out}"
        );
        assert!(
            !text.contains("Hidden") && !text.contains("secret"),
            "{out}"
        );
        assert!(!text.contains("#/components"), "{out}");
    }
}

//! The definitions under `$defs`: which a schema reaches, their names, and their bytes,
//! serialised once and shared by every schema that serves them.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::walk::{Keys, Read};
use super::{Bundler, Direction, Id, Ids, Problem, Rope, State};

impl Bundler<'_> {
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
        let served = state.defs_served.saturating_add(defs.len());
        if served > self.limits.max_defs {
            return Err(Problem::Limit {
                at: String::new(),
                limit: "max_defs",
                value: self.limits.max_defs,
            });
        }
        state.defs_served = served;
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

    /// How many `$defs` entries the schemas served so far hold, to
    /// [`rewind`](Self::rewind) to when the schemas of an operation are not served after all.
    pub(crate) fn served(&self) -> usize {
        self.state.borrow().defs_served
    }

    /// Forgets the `$defs` entries counted since [`served`](Self::served) said `served`.
    pub(crate) fn rewind(&self, served: usize) {
        self.state.borrow_mut().defs_served = served;
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
}

/// The definition's name under `$defs`: the last token of its pointer (a shared subschema's
/// name), made a plain name, unique in the document.
pub(super) fn name_of(state: &mut State<'_>, id: Id) -> String {
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
    // A shared subschema never takes a component's own name, even before the component is
    // named.
    let taken = |state: &State<'_>, name: &String| {
        state.by_name.contains_key(name)
            || (state.targets[id as usize].shared && state.shares.is_component(name))
    };
    while taken(state, &name) {
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

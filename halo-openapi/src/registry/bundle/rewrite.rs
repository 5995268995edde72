//! A schema rewritten: each reference made one into `$defs`, or replaced by the bundled
//! body of its definition where that is copied to its uses.

use serde_json::{Map, Value};

use super::adjust::adjust;
use super::defs::name_of;
use super::walk::{Keys, Read};
use super::{Done, Id, Ids, MAX_INLINE_DEPTH, Pass, State};

/// The value with its references rewritten, at `depth` inside its schema.
pub(super) fn rewrite_value(
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
            // A subschema the document repeats is one definition, as if it were referenced.
            if depth > 0
                && let Some(share) = state.shares.of(value)
            {
                let id = state.by_share[&share];
                return match used(state, id, 1, depth, deps, pass) {
                    Used::Body(body) => Value::Object(body),
                    Used::Value(value) => value,
                };
            }
            let mut out = match map.get("$ref") {
                Some(Value::String(reference)) => {
                    let id = state.by_reference[reference.as_str()];
                    match used(state, id, map.len(), depth, deps, pass) {
                        Used::Body(body) => body,
                        Used::Value(value) => return value,
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
pub(super) fn rewrite(
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

/// What a use of a definition becomes.
enum Used {
    /// An object: the definition's body copied, or a reference to it.
    Body(Map<String, Value>),
    /// The whole value (a boolean schema copied).
    Value(Value),
}

/// A use of the target `id` at `depth`, where the using object has `keys` keys: its body
/// copied where it is copied to its uses (and not too deep), else a reference.
fn used(
    state: &mut State<'_>,
    id: Id,
    keys: usize,
    depth: usize,
    deps: &mut Ids,
    pass: Pass,
) -> Used {
    let done = done(state, id, pass);
    if done.inline && depth + done.depth <= MAX_INLINE_DEPTH {
        for &dep in &done.deps {
            deps.add(dep);
        }
        match done.body.clone() {
            Value::Object(body) => Used::Body(body),
            // A boolean schema inlined beside other keywords: keep the reference, it cannot
            // take siblings.
            _ if keys > 1 => Used::Body(reference_to(state, id, deps)),
            other => Used::Value(other),
        }
    } else {
        Used::Body(reference_to(state, id, deps))
    }
}

/// The bundled body of a target in a pass.
pub(super) fn done<'s>(state: &'s State<'_>, id: Id, pass: Pass) -> &'s Done {
    state.targets[id as usize].done[pass.at()]
        .as_ref()
        .expect("bundled before it is used")
}

/// `{"$ref": "#/$defs/Name"}`, recording the dependency.
fn reference_to(state: &mut State<'_>, id: Id, deps: &mut Ids) -> Map<String, Value> {
    deps.add(id);
    let name = name_of(state, id);
    let mut out = Map::new();
    out.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
    out
}

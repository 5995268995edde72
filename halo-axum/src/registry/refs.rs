//! Resolving `$ref`s into self-contained JSON Schemas.
//!
//! utoipa writes `{"$ref": "#/components/schemas/Book"}` wherever a named type appears. A HALO
//! schema must stand alone, so every reference is replaced by the schema it points at. A type
//! that contains itself cannot be inlined forever: its recursive occurrences become
//! `{"$ref": "#/$defs/Name"}` and the definition is attached under `$defs` of the same schema,
//! so nothing ever dangles.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

/// Deeper than this, references go to `$defs` even when not recursive, which bounds both the
/// recursion of this code and the size of the output.
const MAX_INLINE_DEPTH: usize = 32;

/// Looks references up in one OpenAPI document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolver<'a> {
    document: &'a Value,
    memo: &'a Memo,
}

/// Expansions of references that needed no `$defs` (no recursion, not too deep): they read
/// the same wherever they appear, so each is built once per document.
#[derive(Debug, Default)]
pub(crate) struct Memo(RefCell<HashMap<String, Value>>);

/// A reference that points nowhere in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unresolved(pub(crate) String);

impl<'a> Resolver<'a> {
    pub(crate) fn new(document: &'a Value, memo: &'a Memo) -> Self {
        Self { document, memo }
    }

    /// The value a local reference (`#/components/...`) points at.
    fn lookup(&self, reference: &str) -> Result<&'a Value, Unresolved> {
        reference
            .strip_prefix('#')
            .and_then(|pointer| pointer_lookup(self.document, pointer))
            .ok_or_else(|| Unresolved(reference.to_owned()))
    }

    /// Follows a chain of references to a parameter, request body or response object.
    pub(crate) fn follow(&self, mut value: &'a Value) -> Result<&'a Value, Unresolved> {
        for _ in 0..MAX_INLINE_DEPTH {
            match reference_of(value) {
                Some(reference) => value = self.lookup(reference)?,
                None => return Ok(value),
            }
        }
        Err(Unresolved(
            reference_of(value).unwrap_or_default().to_owned(),
        ))
    }

    /// A self-contained copy of `schema`.
    pub(crate) fn inline(&self, schema: &Value) -> Result<Value, Unresolved> {
        let mut bundle = Bundle::default();
        let mut out = self.expand(schema, &mut Vec::new(), &mut bundle)?;
        let mut defs = Map::new();
        while let Some((reference, name)) = bundle.next_pending() {
            let target = self.lookup(&reference)?;
            let body = self.expand(target, &mut vec![reference], &mut bundle)?;
            defs.insert(name, body);
        }
        if !defs.is_empty()
            && let Value::Object(map) = &mut out
        {
            map.insert("$defs".to_owned(), Value::Object(defs));
        }
        Ok(out)
    }

    fn expand(
        &self,
        value: &Value,
        stack: &mut Vec<String>,
        bundle: &mut Bundle,
    ) -> Result<Value, Unresolved> {
        match value {
            Value::Object(map) => {
                if let Some(reference) = reference_of(value) {
                    return self.expand_reference(reference, map, stack, bundle);
                }
                let mut out = Map::with_capacity(map.len());
                for (key, inner) in map {
                    let inner = if holds_data(key) {
                        inner.clone()
                    } else {
                        self.expand(inner, stack, bundle)?
                    };
                    out.insert(key.clone(), inner);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|item| self.expand(item, stack, bundle))
                .collect::<Result<_, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn expand_reference(
        &self,
        reference: &str,
        map: &Map<String, Value>,
        stack: &mut Vec<String>,
        bundle: &mut Bundle,
    ) -> Result<Value, Unresolved> {
        let target = self.lookup(reference)?;
        let remembered = self.memo.0.borrow().get(reference).cloned();
        let mut out = if let Some(expanded) = remembered {
            expanded
        } else if stack.iter().any(|r| r == reference) || stack.len() >= MAX_INLINE_DEPTH {
            bundle.cuts += 1;
            let name = bundle.name_for(reference);
            let mut out = Map::new();
            out.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
            Value::Object(out)
        } else {
            let cuts_before = bundle.cuts;
            stack.push(reference.to_owned());
            let expanded = self.expand(target, stack, bundle);
            stack.pop();
            let expanded = expanded?;
            if bundle.cuts == cuts_before {
                self.memo
                    .0
                    .borrow_mut()
                    .insert(reference.to_owned(), expanded.clone());
            }
            expanded
        };
        // OpenAPI 3.1 allows keywords beside `$ref` (a field's description, default, ...).
        if let Value::Object(out) = &mut out {
            for (key, value) in map.iter().filter(|(key, _)| *key != "$ref") {
                let value = if holds_data(key) {
                    value.clone()
                } else {
                    self.expand(value, stack, bundle)?
                };
                out.insert(key.clone(), value);
            }
        }
        Ok(out)
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

/// The definitions a schema needs under `$defs`: reference → name, and which are written.
#[derive(Debug, Default)]
struct Bundle {
    names: BTreeMap<String, String>,
    order: Vec<String>,
    written: usize,
    /// How many references were cut (left as `$ref` into `$defs`) so far.
    cuts: usize,
}

impl Bundle {
    fn name_for(&mut self, reference: &str) -> String {
        if let Some(name) = self.names.get(reference) {
            return name.clone();
        }
        let base = reference.rsplit('/').next().unwrap_or("schema");
        let base = halo_protocol::unescape_token(base);
        let base: String = base
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = base.clone();
        let mut n = 2;
        while self.names.values().any(|taken| *taken == name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.names.insert(reference.to_owned(), name.clone());
        self.order.push(reference.to_owned());
        name
    }

    fn next_pending(&mut self) -> Option<(String, String)> {
        let reference = self.order.get(self.written)?.clone();
        self.written += 1;
        let name = self.names[&reference].clone();
        Some((reference, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"components": {"schemas": {
            "Book": {"type": "object", "properties": {
                "id": {"type": "integer"},
                "author": {"$ref": "#/components/schemas/Author", "description": "who wrote it"}}},
            "Author": {"type": "object", "properties": {"name": {"type": "string"}}},
            "Node": {"type": "object", "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}},
            "Ping": {"type": "object", "properties": {"pong": {"$ref": "#/components/schemas/Pong"}}},
            "Pong": {"type": "object", "properties": {"ping": {"$ref": "#/components/schemas/Ping"}}},
            "WithExample": {"type": "object", "example": {"$ref": "not a reference"}}
        }}})
    }

    #[test]
    fn inlines_plain_references_and_keeps_siblings() {
        let doc = doc();
        let out = Resolver::new(&doc, &Memo::default())
            .inline(&json!({"$ref": "#/components/schemas/Book"}))
            .unwrap();
        assert_eq!(
            out,
            json!({"type": "object", "properties": {
                "id": {"type": "integer"},
                "author": {"type": "object", "properties": {"name": {"type": "string"}},
                           "description": "who wrote it"}}})
        );
    }

    #[test]
    fn recursion_goes_to_defs() {
        let doc = doc();
        let out = Resolver::new(&doc, &Memo::default())
            .inline(&json!({"$ref": "#/components/schemas/Node"}))
            .unwrap();
        assert_eq!(
            out["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(
            out["$defs"]["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert!(halo_protocol::is_self_contained(&out));
    }

    #[test]
    fn mutual_recursion_is_closed() {
        let doc = doc();
        let out = Resolver::new(&doc, &Memo::default())
            .inline(&json!({"$ref": "#/components/schemas/Ping"}))
            .unwrap();
        assert!(halo_protocol::is_self_contained(&out), "{out}");
        assert!(out["$defs"].get("Ping").is_some());
    }

    #[test]
    fn remembered_expansions_read_like_fresh_ones() {
        let doc = doc();
        let memo = Memo::default();
        let shared = Resolver::new(&doc, &memo);
        for name in [
            "Book", "Node", "Ping", "Pong", "Node", "Book", "Pong", "Ping",
        ] {
            let schema = json!({"$ref": format!("#/components/schemas/{name}")});
            let remembered = shared.inline(&schema).unwrap();
            let fresh_memo = Memo::default();
            let fresh = Resolver::new(&doc, &fresh_memo).inline(&schema).unwrap();
            assert_eq!(remembered, fresh, "{name}");
            assert!(halo_protocol::is_self_contained(&remembered), "{name}");
        }
    }

    #[test]
    fn data_keywords_are_not_resolved() {
        let doc = doc();
        let out = Resolver::new(&doc, &Memo::default())
            .inline(&json!({"$ref": "#/components/schemas/WithExample"}))
            .unwrap();
        assert_eq!(out["example"], json!({"$ref": "not a reference"}));
    }

    #[test]
    fn dangling_and_external_references_are_errors() {
        let doc = doc();
        let memo = Memo::default();
        let resolver = Resolver::new(&doc, &memo);
        assert!(
            resolver
                .inline(&json!({"$ref": "#/components/schemas/Nope"}))
                .is_err()
        );
        assert!(
            resolver
                .inline(&json!({"$ref": "https://example.com/s.json"}))
                .is_err()
        );
        assert!(
            resolver
                .follow(&json!({"$ref": "#/components/parameters/x"}))
                .is_err()
        );
    }
}

//! `missing-input-description`: every argument, and every property inside one at any depth,
//! has a description.

use serde_json::{Map, Value};

use super::helpers::is_blank;
use super::{Rule, Tool};
use crate::{escape_token, unescape_token};

/// How deep the description check walks into a schema.
const MAX_DEPTH: usize = 64;

impl Tool<'_> {
    pub(super) fn input_descriptions(&mut self) {
        let shared = &self.schema.defs;
        let mut missing = Vec::new();
        for (param, field) in &self.schema.input {
            // Its own definitions, else the tool's shared ones.
            let mut defs = shared.clone();
            if let Some(Value::Object(own)) = field.schema.get("$defs") {
                defs.extend(own.iter().map(|(name, body)| (name.clone(), body.clone())));
            }
            let mut at = Vec::new();
            undescribed(&field.schema, "", true, &defs, 0, &mut at);
            missing.extend(at.into_iter().map(|inner| (Some(param.clone()), inner)));
        }
        // The shared definitions are walked where they are, once.
        for (definition, body) in shared {
            if let Value::Object(body) = body {
                let pointer = format!("/$defs/{}", escape_token(definition));
                let mut at = Vec::new();
                undescribed(body, &pointer, false, shared, 0, &mut at);
                missing.extend(at.into_iter().map(|inner| (None, inner)));
            }
        }
        let name = self.entry.name.clone();
        for (param, inner) in missing {
            let (message, pointer) = match &param {
                Some(param) if inner.is_empty() => (
                    format!("`{name}`: input `{param}` has no description"),
                    format!("/input/{}", escape_token(param)),
                ),
                Some(param) => (
                    format!("`{name}`: input `{param}` has no description at `{inner}`"),
                    format!("/input/{}{inner}", escape_token(param)),
                ),
                None => (
                    format!(
                        "`{name}`: a definition its inputs share has no description at `{inner}`"
                    ),
                    inner,
                ),
            };
            self.push_at(Rule::MissingInputDescription, &pointer, message)
                .param = param;
        }
    }
}

/// Collects the pointers (relative to `schema`) of the places that should have a description
/// and do not: `schema` itself when `needs` is set, and every property at any depth. Items,
/// branches of `allOf`/`anyOf`/`oneOf` and `$defs` need none themselves, but their
/// properties do. `$ref`s are not followed (the definitions are walked where they are).
fn undescribed(
    schema: &Map<String, Value>,
    pointer: &str,
    needs: bool,
    defs: &Map<String, Value>,
    depth: usize,
    out: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if needs && !is_described(schema, defs, depth) {
        out.push(pointer.to_owned());
    }
    let mut walk = |value: &Value, pointer: String, needs: bool| {
        if let Value::Object(child) = value {
            undescribed(child, &pointer, needs, defs, depth + 1, out);
        }
    };
    for (property, at) in members(schema, pointer, "properties") {
        walk(property, at, true);
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(value) = schema.get(keyword) {
            walk(value, format!("{pointer}/{keyword}"), false);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            for (index, branch) in branches.iter().enumerate() {
                walk(branch, format!("{pointer}/{keyword}/{index}"), false);
            }
        }
    }
    for (definition, at) in members(schema, pointer, "$defs") {
        walk(definition, at, false);
    }
}

/// The members of an object-valued keyword (`properties`, `$defs`), each with its pointer.
fn members<'s>(
    schema: &'s Map<String, Value>,
    pointer: &'s str,
    keyword: &'s str,
) -> impl Iterator<Item = (&'s Value, String)> + 's {
    schema
        .get(keyword)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(move |(name, member)| {
            (
                member,
                format!("{pointer}/{keyword}/{}", escape_token(name)),
            )
        })
}

/// Whether a schema says what it is: its own description, a described branch of a
/// composition (`Option<T>` is `oneOf: [null, T]`), or a `$ref` to a described definition.
fn is_described(schema: &Map<String, Value>, defs: &Map<String, Value>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    if schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|text| !is_blank(text))
    {
        return true;
    }
    let referenced = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(unescape_token(name).as_ref()));
    if let Some(Value::Object(definition)) = referenced
        && is_described(definition, defs, depth + 1)
    {
        return true;
    }
    ["allOf", "anyOf", "oneOf"].iter().any(|keyword| {
        matches!(schema.get(*keyword), Some(Value::Array(branches))
            if branches.iter().any(|branch| matches!(branch,
                Value::Object(branch) if is_described(branch, defs, depth + 1))))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lint::fixtures::{good, ids, with_first};
    use crate::lint::{Linter, Rule, Severity};
    use crate::{InputField, Location};

    #[test]
    fn input_descriptions_at_any_depth() {
        let found = with_first(|_, schema| {
            schema.input.insert(
                "owner".into(),
                InputField::new(json!({
                    "type": "object",
                    "properties": {
                        "email": {"type": "string", "description": "Where to write"},
                        "a/b": {"type": "string"},
                        "tags": {"type": "array", "description": "Labels",
                                 "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "home": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/Home"}]},
                        "away": {"$ref": "#/$defs/Bare"}
                    },
                    "$defs": {
                        "Home": {"type": "object", "description": "A home",
                                 "properties": {"street": {"type": "string"}}},
                        "Bare": {"type": "object"}
                    }
                }))
                .located(Location::Body),
            );
            schema.examples[0].input.insert("owner".into(), json!({}));
        });
        let mut pointers: Vec<&str> = found.iter().filter_map(|f| f.pointer.as_deref()).collect();
        pointers.sort_unstable();
        assert_eq!(
            pointers,
            [
                "/input/owner",
                "/input/owner/$defs/Home/properties/street",
                "/input/owner/properties/away",
                "/input/owner/properties/a~1b",
                "/input/owner/properties/tags/items/properties/k",
            ]
        );
        assert!(found.iter().all(|f| f.rule == Rule::MissingInputDescription
            && f.param.as_deref() == Some("owner")
            && f.severity == Severity::Warning));
        assert_eq!(
            found[0].message,
            "`create_pet`: input `owner` has no description"
        );
        assert!(
            found[1].message.ends_with("at `/properties/a~1b`"),
            "{}",
            found[1].message
        );
        // A path parameter without one.
        let mut tools = good();
        tools[1].1.input["id"].schema.remove("description");
        let report = Linter::new().check(&tools);
        assert_eq!(report.findings[0].pointer.as_deref(), Some("/input/id"));
        // The walk stops at a depth no real schema reaches (a parsed document is at most
        // 128 levels deep anyway).
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"description": "d", "properties": {"x": deep}});
        }
        let found = with_first(|_, schema| {
            schema.input.insert("deep".into(), InputField::new(deep));
        });
        assert_eq!(ids(&found), []);
    }

    #[test]
    fn shared_definitions_are_checked_once_where_they_are() {
        let found = with_first(|_, schema| {
            for param in ["home", "work"] {
                schema.input.insert(
                    param.into(),
                    InputField::new(json!({"$ref": "#/$defs/Place"})).located(Location::Body),
                );
            }
            // Described by its definition; one property of it is not.
            schema.defs.insert(
                "Place".into(),
                json!({"type": "object", "description": "A place",
                       "properties": {"street": {"type": "string"}}}),
            );
            schema.examples[0].input.insert("home".into(), json!({}));
        });
        let pointers: Vec<(Option<&str>, Option<&str>)> = found
            .iter()
            .map(|f| (f.param.as_deref(), f.pointer.as_deref()))
            .collect();
        assert_eq!(pointers, [(None, Some("/$defs/Place/properties/street"))]);
        assert!(found[0].message.contains("a definition its inputs share"));
    }
}

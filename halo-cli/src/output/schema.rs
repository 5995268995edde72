//! A readable summary of one operation's schema: its texts, its HALO fields one per line,
//! and a table of its inputs.

use std::fmt::Write as _;

use halo_client::protocol::ToolSchema;
use serde::Serialize;
use serde_json::Value;

use super::{DESCRIPTION_WIDTH, block, line, table, truncate};

/// A readable summary of one operation's schema.
pub(crate) fn schema(schema: &ToolSchema) -> String {
    let mut out = format!("{} {}\n", line(&schema.call.method), line(&schema.call.url));
    if !schema.description.is_empty() {
        for text in block(&schema.description).lines() {
            if text.trim().is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "  {text}");
            }
        }
    }
    let mut fields: Vec<(&str, String)> = Vec::new();
    if let Some(why) = &schema.why {
        fields.push(("why", line(why)));
    }
    if !schema.tags.is_empty() {
        fields.push(("tags", line(&schema.tags.join(", "))));
    }
    fields.push(("auth", auth(schema)));
    if let Some(output) = &schema.output {
        fields.push(("output", type_of(output)));
    }
    if let Some(effects) = &schema.effects {
        let mut parts = Vec::new();
        match effects.reversible {
            Some(true) => parts.push("reversible".to_owned()),
            Some(false) => parts.push("not reversible".to_owned()),
            None => {}
        }
        if let Some(undo) = &effects.undo {
            parts.push(format!("undo: {}", line(undo)));
        }
        push_parts(&mut fields, "effects", parts);
    }
    if let Some(limits) = &schema.limits {
        let mut parts = Vec::new();
        match limits.idempotent {
            Some(true) => parts.push("idempotent".to_owned()),
            Some(false) => parts.push("not idempotent".to_owned()),
            None => {}
        }
        if let Some(rate) = &limits.rate {
            parts.push(format!("rate: {rate}"));
        }
        if let Some(key) = &limits.idempotency_key {
            parts.push(format!("idempotency key: {}", line(key)));
        }
        push_parts(&mut fields, "limits", parts);
    }
    if let Some(resilience) = &schema.resilience {
        let mut parts = Vec::new();
        match resilience.retry {
            Some(true) => parts.push("retry".to_owned()),
            Some(false) => parts.push("no retry".to_owned()),
            None => {}
        }
        if let Some(backoff) = &resilience.backoff {
            parts.push(format!("backoff: {}", name_of(backoff)));
        }
        if let Some(timeout) = resilience.timeout_ms {
            parts.push(format!("timeout: {timeout} ms"));
        }
        if let Some(fallback) = &resilience.fallback {
            parts.push(format!("fallback: {}", line(fallback)));
        }
        push_parts(&mut fields, "resilience", parts);
    }
    let lifecycle = &schema.lifecycle;
    let mut parts = Vec::new();
    if let Some(status) = &lifecycle.status {
        parts.push(name_of(status));
    }
    if let Some(sunset) = &lifecycle.sunset {
        parts.push(format!("sunset: {}", line(sunset)));
    }
    if let Some(replacement) = &lifecycle.replace_with {
        parts.push(format!("use instead: {}", line(replacement)));
    }
    push_parts(&mut fields, "status", parts);
    for next in &schema.next {
        fields.push((
            "next",
            format!("{} -> {}", line(&next.when), line(&next.suggest)),
        ));
    }
    if let Some(stream) = &schema.stream {
        fields.push(("stream", line(&stream.events.join(", "))));
    }
    if !schema.examples.is_empty() {
        fields.push((
            "examples",
            format!("{} (see --json)", schema.examples.len()),
        ));
    }
    let width = fields
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0)
        .max("inputs".len());
    out.push('\n');
    for (name, value) in &fields {
        let _ = writeln!(
            out,
            "  {:<width$}  {value}",
            format!("{name}:"),
            width = width + 1
        );
    }
    if schema.input.is_empty() {
        let _ = writeln!(out, "  {:<width$}  none", "inputs:", width = width + 1);
    } else {
        let _ = writeln!(out, "  inputs:");
        let rows: Vec<Vec<String>> = schema
            .input
            .iter()
            .map(|(name, field)| {
                let schema = Value::Object(field.schema.clone());
                vec![
                    line(name),
                    field
                        .location
                        .map_or_else(|| "-".to_owned(), |l| name_of(&l)),
                    type_of(&schema),
                    if field.required { "yes" } else { "no" }.to_owned(),
                    truncate(
                        &line(
                            field
                                .schema
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        ),
                        DESCRIPTION_WIDTH,
                    ),
                ]
            })
            .collect();
        for row in table(&["NAME", "IN", "TYPE", "REQUIRED", "DESCRIPTION"], &rows).lines() {
            let _ = writeln!(out, "    {row}");
        }
    }
    out
}

fn push_parts(fields: &mut Vec<(&'static str, String)>, name: &'static str, parts: Vec<String>) {
    if !parts.is_empty() {
        fields.push((name, parts.join("; ")));
    }
}

fn auth(schema: &ToolSchema) -> String {
    let Some(auth) = &schema.auth else {
        return "none".to_owned();
    };
    let mut text = name_of(&auth.kind);
    if let Some(header) = &auth.header {
        let _ = write!(text, " in {}", line(header));
    }
    if !auth.scopes.is_empty() {
        let _ = write!(text, " (scopes: {})", line(&auth.scopes.join(", ")));
    }
    if let Some(url) = &auth.token_url {
        let _ = write!(text, " (token: {})", line(url));
    }
    text
}

/// The serde name of an enum value (`deprecated`, `exponential`, `path`).
fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => line(&name),
        _ => "?".to_owned(),
    }
}

/// A short type for a JSON Schema: `integer`, `string | null`, `array of object`, `one of 2`.
fn type_of(schema: &Value) -> String {
    let Some(map) = schema.as_object() else {
        return "any".to_owned();
    };
    let base = match map.get("type") {
        Some(Value::String(kind)) => line(kind),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .map(line)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                return line(reference.rsplit('/').next().unwrap_or(reference));
            }
            for (keyword, label) in [("oneOf", "one of"), ("anyOf", "any of")] {
                if let Some(Value::Array(items)) = map.get(keyword) {
                    let kinds: Vec<String> = items.iter().map(type_of).collect();
                    return format!("{label} {}", kinds.join(", "));
                }
            }
            if let Some(Value::Array(items)) = map.get("allOf") {
                if let [only] = items.as_slice() {
                    return type_of(only);
                }
                return "all of".to_owned();
            }
            if map.contains_key("enum") {
                return "enum".to_owned();
            }
            if map.contains_key("const") {
                return "const".to_owned();
            }
            return "any".to_owned();
        }
    };
    if base == "array"
        && let Some(items) = map.get("items")
    {
        return format!("array of {}", type_of(items));
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use halo_client::protocol::{Call, InputField, Location};
    use serde_json::json;

    #[test]
    fn types() {
        assert_eq!(type_of(&json!({"type": "integer"})), "integer");
        assert_eq!(
            type_of(&json!({"type": ["string", "null"]})),
            "string | null"
        );
        assert_eq!(
            type_of(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            type_of(&json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
            "one of string, integer"
        );
        assert_eq!(
            type_of(&json!({"description": "d", "allOf": [{"type": "object"}]})),
            "object"
        );
        assert_eq!(type_of(&json!({"$ref": "#/$defs/Node"})), "Node");
        assert_eq!(type_of(&json!({})), "any");
    }

    #[test]
    fn schema_summary() {
        let mut s = ToolSchema::new(Call::new("GET", "/pets/{id}"));
        s.description = "Get one pet.".into();
        s.why = Some("Use with an id".into());
        s.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer", "description": "Pet id"}))
                .located(Location::Path)
                .required(true),
        );
        let text = schema(&s);
        assert!(
            text.starts_with("GET /pets/{id}\n  Get one pet.\n"),
            "{text}"
        );
        assert!(text.contains("  why:     Use with an id\n"), "{text}");
        assert!(text.contains("  auth:    none\n"), "{text}");
        assert!(
            text.contains("    NAME  IN    TYPE     REQUIRED  DESCRIPTION\n"),
            "{text}"
        );
        assert!(
            text.contains("    id    path  integer  yes       Pet id\n"),
            "{text}"
        );
    }
}

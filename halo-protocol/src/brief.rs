//! Brief texts and schemas: what a model needs to choose and call a tool, without the notes
//! (for answers that must stay small, such as `search_tools`').

use serde_json::{Map, Value};

use crate::is_data_keyword;

/// The most characters of a description inside a brief schema.
const SCHEMA_DESCRIPTION_CHARS: usize = 160;

/// `text`'s first paragraph, cut at the end of a sentence (or else a word) to at most
/// `max_chars` characters, with `…` where it was cut.
///
/// ```
/// use halo_protocol::brief_text;
///
/// assert_eq!(brief_text("Lists issues. Pull requests count.\n\nNotes.", 100), "Lists issues. Pull requests count.");
/// assert_eq!(brief_text("Lists issues. Pull requests count too.", 20), "Lists issues.");
/// assert_eq!(brief_text("Lists every open issue", 12), "Lists every…");
/// ```
#[must_use]
pub fn brief_text(text: &str, max_chars: usize) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or_default().trim();
    if paragraph.chars().count() <= max_chars {
        return paragraph.to_owned();
    }
    let end = paragraph
        .char_indices()
        .nth(max_chars)
        .map_or(paragraph.len(), |(at, _)| at);
    let head = &paragraph[..end];
    if let Some(sentence) = head.rfind(". ").filter(|at| *at > 0) {
        return head[..=sentence].to_owned();
    }
    let word = head.rfind(char::is_whitespace).unwrap_or(head.len());
    format!("{}…", head[..word].trim_end())
}

/// A JSON Schema with every description cut to its first sentence or so ([`brief_text`]),
/// and `examples` left out; everything that constrains a value is kept.
///
/// ```
/// use halo_protocol::brief_schema;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "description": {"type": "string", "description": "The body. Markdown is allowed.\n\nMore."}}});
/// let brief = brief_schema(schema.as_object().unwrap());
/// assert_eq!(brief["properties"]["description"]["description"], "The body. Markdown is allowed.");
/// ```
#[must_use]
pub fn brief_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut brief = Map::new();
    for (key, value) in schema {
        let value = match (key.as_str(), value) {
            ("description", Value::String(text)) => {
                Value::String(brief_text(text, SCHEMA_DESCRIPTION_CHARS))
            }
            ("examples" | "example", _) => continue,
            ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(map)) => {
                Value::Object(
                    map.iter()
                        .map(|(name, inner)| (name.clone(), brief_value(inner)))
                        .collect(),
                )
            }
            (_, value) if is_data_keyword(key) => value.clone(),
            (_, value) => brief_value(value),
        };
        brief.insert(key.clone(), value);
    }
    brief
}

/// A schema or an array of schemas, brief.
fn brief_value(value: &Value) -> Value {
    match value {
        Value::Object(schema) => Value::Object(brief_schema(schema)),
        Value::Array(items) => Value::Array(items.iter().map(brief_value).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn texts_beyond_ascii_are_cut_at_characters() {
        let text = "é".repeat(300);
        let brief = brief_text(&text, 10);
        assert_eq!(brief.chars().count(), 11, "{brief}");
        assert_eq!(brief_text("", 10), "");
        assert_eq!(brief_text("   \n\n  ", 10), "");
    }

    #[test]
    fn constraints_and_data_stay() {
        let schema = json!({
            "type": "object",
            "description": "x. y",
            "required": ["a"],
            "properties": {
                "a": {"type": "string", "enum": ["description"], "default": "description",
                      "examples": ["e"], "maxLength": 5},
                "b": {"anyOf": [{"type": "integer", "description": "One.\n\nTwo."}, {"type": "null"}]},
                "examples": {"type": "array", "items": {"type": "string"}}
            },
            "$defs": {"d": {"type": "object", "description": "D."}}
        });
        let brief = Value::Object(brief_schema(schema.as_object().unwrap()));
        assert_eq!(
            brief,
            json!({
                "type": "object",
                "description": "x. y",
                "required": ["a"],
                "properties": {
                    "a": {"type": "string", "enum": ["description"], "default": "description",
                          "maxLength": 5},
                    "b": {"anyOf": [{"type": "integer", "description": "One."}, {"type": "null"}]},
                    "examples": {"type": "array", "items": {"type": "string"}}
                },
                "$defs": {"d": {"type": "object", "description": "D."}}
            })
        );
    }
}

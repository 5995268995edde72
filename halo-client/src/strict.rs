//! Input schemas rewritten for OpenAI's strict mode (Structured Outputs for function calls).
//!
//! With `"strict": true`, OpenAI constrains a model's arguments to the function's schema, and
//! accepts only a subset of JSON Schema (OpenAI's Structured Outputs guide, "Supported
//! schemas", read for this code in 2026):
//!
//! - the types string, number, integer, boolean, object and array, `enum`, `const` and
//!   `anyOf` (whose branches follow the same rules); the root is an object, not an `anyOf`;
//! - every object says `additionalProperties: false` and lists every property in
//!   `required`: an optional property is emulated by a union with `null`;
//! - besides types, only these constraints: `pattern` and `format` (`date-time`, `time`,
//!   `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`) on strings;
//!   `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` on numbers;
//!   `minItems` and `maxItems` on arrays; `allOf`, `not`, `if`/`then`/`else`,
//!   `dependentRequired` and `dependentSchemas` are not supported;
//! - definitions (`$defs`) and recursion through `$ref` are supported;
//! - a schema holds at most 5,000 object properties, 10 levels of nesting, 1,000 enum
//!   values, and 120,000 characters of property names, definition names, enum and const
//!   values.
//!
//! OpenAI's own SDKs also unravel a `$ref` that has sibling keywords (a described reference),
//! and `default` has been refused by strict mode in the past; neither is kept here.

use serde_json::{Map, Value, json};

/// The string formats strict mode supports.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords kept as they are (when their value has the right type).
const KEPT: [&str; 6] = ["type", "description", "title", "enum", "const", "$ref"];

/// Numeric constraints strict mode supports.
const NUMERIC: [&str; 7] = [
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// How deep the rewrite goes (a parsed document is at most 128 levels deep anyway).
const MAX_DEPTH: usize = 64;

/// How many rounds of `allOf` merging one schema gets (a merged definition may bring
/// another `allOf`).
const MAX_MERGES: usize = 8;

/// The documented size limits of a strict schema.
const MAX_PROPERTIES: usize = 5_000;
const MAX_NESTING: usize = 10;
const MAX_ENUM_VALUES: usize = 1_000;
const MAX_NAME_CHARS: usize = 120_000;

/// An input schema (a JSON Schema object, as [`input_schema`](halo_protocol::input_schema)
/// makes it) rewritten for OpenAI's strict mode.
///
/// - Every object gets `additionalProperties: false` (a schema of extra properties is
///   dropped: strict mode allows none) and lists every property in `required`; a property
///   that was optional becomes nullable (`"type": ["string", "null"]`, or an `anyOf` with
///   `{"type": "null"}` for a reference, an enum or a union), so a model that leaves it out
///   sends `null` for it.
/// - `oneOf` becomes `anyOf`; `allOf` is merged into its schema; a `$ref` with a description
///   becomes a one-branch `anyOf` beside it; an array without `items` and a schema that
///   allows anything get a union of the scalar types; OpenAPI's `nullable: true` becomes a
///   union with `null`.
/// - Keywords strict mode does not support are dropped (`default`, `examples`,
///   `minLength`, `maxLength`, `uniqueItems`, unsupported `format`s, `not`, `if`, ...); the
///   length bounds, uniqueness and a short default move into the description, so that the
///   model still reads them.
///
/// Arguments that follow the rewritten schema may hold `null` for the optional inputs a
/// model left out: drop those members before calling the API if it does not accept `null`
/// for them (queries already skip `null`).
///
/// ```
/// use halo_client::strict_schema;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string", "minLength": 1},
///         "unit": {"type": "string", "enum": ["C", "F"], "default": "C"}
///     },
///     "required": ["city"],
///     "additionalProperties": false
/// });
/// let strict = strict_schema(schema.as_object().unwrap());
/// assert_eq!(serde_json::Value::Object(strict), json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string", "description": "(at least 1 character)"},
///         "unit": {"anyOf": [{"type": "string", "enum": ["C", "F"]}, {"type": "null"}],
///                  "description": "(default: \"C\")"}
///     },
///     "required": ["city", "unit"],
///     "additionalProperties": false
/// }));
/// ```
#[must_use]
pub fn strict_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let defs = match schema.get("$defs") {
        Some(Value::Object(defs)) => defs.clone(),
        _ => Map::new(),
    };
    let mut root = rewrite(schema.clone(), &defs, 0);
    // The root is an object, never a union.
    if root.get("type") != Some(&json!("object")) {
        root.insert("type".into(), json!("object"));
        root.remove("anyOf");
        root.entry("properties").or_insert_with(|| json!({}));
        root.entry("required").or_insert_with(|| json!([]));
        root.insert("additionalProperties".into(), Value::Bool(false));
    }
    root
}

/// Which of strict mode's documented size limits a schema exceeds, if any.
pub(crate) fn exceeded_limit(schema: &Map<String, Value>) -> Option<String> {
    let mut size = Size::default();
    measure(schema, 0, 0, &mut size);
    if size.properties > MAX_PROPERTIES {
        return Some(format!(
            "{} object properties (at most {MAX_PROPERTIES})",
            size.properties
        ));
    }
    if size.nesting > MAX_NESTING {
        return Some(format!(
            "{} levels of nesting (at most {MAX_NESTING})",
            size.nesting
        ));
    }
    if size.enum_values > MAX_ENUM_VALUES {
        return Some(format!(
            "{} enum values (at most {MAX_ENUM_VALUES})",
            size.enum_values
        ));
    }
    if size.name_chars > MAX_NAME_CHARS {
        return Some(format!(
            "{} characters of names and enum values (at most {MAX_NAME_CHARS})",
            size.name_chars
        ));
    }
    None
}

#[derive(Default)]
struct Size {
    properties: usize,
    nesting: usize,
    enum_values: usize,
    name_chars: usize,
}

fn measure(schema: &Map<String, Value>, nesting: usize, depth: usize, size: &mut Size) {
    if depth > MAX_DEPTH {
        return;
    }
    let walk = |value: &Value, nesting: usize, size: &mut Size| {
        if let Value::Object(child) = value {
            measure(child, nesting, depth + 1, size);
        }
    };
    if let Some(Value::Object(properties)) = schema.get("properties") {
        size.nesting = size.nesting.max(nesting + 1);
        size.properties += properties.len();
        for (name, property) in properties {
            size.name_chars += name.chars().count();
            walk(property, nesting + 1, size);
        }
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        size.enum_values += values.len();
        size.name_chars += values.iter().map(text_chars).sum::<usize>();
    }
    if let Some(value) = schema.get("const") {
        size.name_chars += text_chars(value);
    }
    if let Some(items) = schema.get("items") {
        walk(items, nesting, size);
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        for branch in branches {
            walk(branch, nesting, size);
        }
    }
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, definition) in defs {
            size.name_chars += name.chars().count();
            // A definition nests from where it is used; counted from its own root.
            walk(definition, 0, size);
        }
    }
}

fn text_chars(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// One schema (and everything in it) rewritten.
fn rewrite(
    mut schema: Map<String, Value>,
    defs: &Map<String, Value>,
    depth: usize,
) -> Map<String, Value> {
    if depth > MAX_DEPTH {
        return any_scalar();
    }
    merge_all_of(&mut schema, defs);
    let mut notes: Vec<String> = Vec::new();
    let nullable = schema.get("nullable") == Some(&Value::Bool(true));
    // A union is `anyOf`; `oneOf` (exactly one) reads the same to a model.
    if let Some(one_of) = schema.remove("oneOf")
        && !schema.contains_key("anyOf")
    {
        schema.insert("anyOf".into(), one_of);
    }
    let mut out = Map::new();
    for keyword in KEPT {
        if let Some(value) = schema.remove(keyword) {
            let fits = match keyword {
                "type" => is_type(&value),
                "description" | "title" | "$ref" => value.is_string(),
                "enum" => value.as_array().is_some_and(|values| !values.is_empty()),
                _ => true,
            };
            if fits {
                out.insert(keyword.into(), value);
            }
        }
    }
    for keyword in NUMERIC {
        if let Some(value) = schema.remove(keyword).filter(Value::is_number) {
            out.insert(keyword.into(), value);
        }
    }
    if let Some(Value::String(pattern)) = schema.remove("pattern") {
        out.insert("pattern".into(), Value::String(pattern));
    }
    if let Some(Value::String(format)) = schema.remove("format")
        && FORMATS.contains(&format.as_str())
    {
        out.insert("format".into(), Value::String(format));
    }
    notes.extend(dropped_constraints(&schema));
    // Unions: each branch is a schema of its own.
    if let Some(Value::Array(branches)) = schema.remove("anyOf") {
        let branches: Vec<Value> = branches
            .into_iter()
            .filter_map(|branch| match branch {
                Value::Object(branch) => Some(Value::Object(rewrite(branch, defs, depth + 1))),
                _ => None,
            })
            .collect();
        if !branches.is_empty() {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }
    if let Some(Value::Object(local)) = schema.remove("$defs") {
        let local: Map<String, Value> = local
            .into_iter()
            .map(|(name, definition)| {
                let definition = match definition {
                    Value::Object(definition) => rewrite(definition, defs, depth + 1),
                    _ => any_scalar(),
                };
                (name, Value::Object(definition))
            })
            .collect();
        out.insert("$defs".into(), Value::Object(local));
    }
    if is_object(&out, &schema) {
        object(&mut out, &mut schema, defs, depth);
    }
    if is_array(&out, &schema) {
        let items = match schema.remove("items") {
            Some(Value::Object(items)) => rewrite(items, defs, depth + 1),
            // A tuple (old `items: [...]`, or `prefixItems`): any of its schemas.
            Some(Value::Array(tuple)) => union_of(tuple, defs, depth),
            _ => union_of(tuple_of(&schema), defs, depth),
        };
        out.insert("items".into(), Value::Object(items));
    }
    // A described reference: the reference becomes a one-branch union beside the words.
    if out.len() > 1
        && let Some(reference) = out.remove("$ref")
    {
        let branch = json!({"$ref": reference});
        match out.get_mut("anyOf") {
            Some(Value::Array(branches)) => branches.push(branch),
            _ => {
                out.insert("anyOf".into(), json!([branch]));
            }
        }
    }
    if !constrains_kind(&out) {
        // A schema that allows anything: strict mode knows no such thing.
        let description = out.remove("description");
        let title = out.remove("title");
        out.extend(any_scalar());
        if let Some(title) = title {
            out.insert("title".into(), title);
        }
        if let Some(description) = description {
            out.insert("description".into(), description);
        }
    }
    if !notes.is_empty() {
        let note = format!("({})", notes.join("; "));
        let description = match out.remove("description") {
            Some(Value::String(text)) if !text.trim().is_empty() => format!("{text} {note}"),
            _ => note,
        };
        out.insert("description".into(), Value::String(description));
    }
    if nullable {
        out = make_nullable(out);
    }
    out
}

/// The schemas of a tuple (`prefixItems`, or an old-style `items` array).
fn tuple_of(schema: &Map<String, Value>) -> Vec<Value> {
    match schema.get("prefixItems") {
        Some(Value::Array(tuple)) => tuple.clone(),
        _ => Vec::new(),
    }
}

/// Any of these schemas, rewritten (one of them alone, or any scalar for none).
fn union_of(branches: Vec<Value>, defs: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    let mut rewritten: Vec<Value> = branches
        .into_iter()
        .filter_map(|branch| match branch {
            Value::Object(branch) => Some(Value::Object(rewrite(branch, defs, depth + 1))),
            _ => None,
        })
        .collect();
    match rewritten.len() {
        0 => any_scalar(),
        1 => match rewritten.pop() {
            Some(Value::Object(only)) => only,
            _ => any_scalar(),
        },
        _ => {
            let mut union = Map::new();
            union.insert("anyOf".into(), Value::Array(rewritten));
            union
        }
    }
}

/// The object keywords: every property rewritten, all of them required, the optional
/// ones nullable, no other property allowed.
fn object(
    out: &mut Map<String, Value>,
    schema: &mut Map<String, Value>,
    defs: &Map<String, Value>,
    depth: usize,
) {
    let required: Vec<String> = match schema.remove("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let properties = match schema.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    let mut rewritten = Map::new();
    for (name, property) in properties {
        let property = match property {
            Value::Object(property) => rewrite(property, defs, depth + 1),
            // `true` (anything) or `false` (nothing): strict mode has neither.
            _ => any_scalar(),
        };
        let property = if required.contains(&name) {
            property
        } else {
            make_nullable(property)
        };
        rewritten.insert(name, Value::Object(property));
    }
    if !out.contains_key("type") {
        out.insert("type".into(), json!("object"));
    }
    let names: Vec<Value> = rewritten.keys().cloned().map(Value::String).collect();
    out.insert("properties".into(), Value::Object(rewritten));
    out.insert("required".into(), Value::Array(names));
    out.insert("additionalProperties".into(), Value::Bool(false));
}

/// Merges `allOf` into its schema: a lone reference becomes the schema's `$ref`; otherwise
/// each branch (a reference read from `$defs`) adds its properties and `required` names and
/// the keywords the schema does not have.
fn merge_all_of(schema: &mut Map<String, Value>, defs: &Map<String, Value>) {
    for _ in 0..MAX_MERGES {
        let Some(all_of) = schema.remove("allOf") else {
            return;
        };
        let Value::Array(branches) = all_of else {
            continue;
        };
        if let [Value::Object(only)] = branches.as_slice()
            && only.len() == 1
            && only.contains_key("$ref")
            && !schema.contains_key("$ref")
        {
            schema.extend(only.clone());
            continue;
        }
        for branch in branches {
            let Value::Object(mut branch) = branch else {
                continue;
            };
            if let Some(Value::String(reference)) = branch.remove("$ref")
                && let Some(Value::Object(definition)) = reference
                    .strip_prefix("#/$defs/")
                    .and_then(|name| defs.get(&halo_protocol::unescape_token(name).into_owned()))
            {
                for (keyword, value) in definition {
                    branch
                        .entry(keyword.clone())
                        .or_insert_with(|| value.clone());
                }
            }
            merge_into(schema, branch);
        }
    }
    schema.remove("allOf");
}

fn merge_into(schema: &mut Map<String, Value>, branch: Map<String, Value>) {
    for (keyword, value) in branch {
        match (keyword.as_str(), schema.get_mut(&keyword), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, property) in theirs {
                    mine.entry(name).or_insert(property);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                schema.insert(keyword, value);
            }
        }
    }
}

/// Notes for the description about the constraints strict mode drops.
fn dropped_constraints(schema: &Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    let count = |keyword: &str| schema.get(keyword).and_then(Value::as_u64);
    let plural = |n: u64| if n == 1 { "character" } else { "characters" };
    match (count("minLength").filter(|n| *n > 0), count("maxLength")) {
        (Some(min), Some(max)) => notes.push(format!("{min} to {max} characters")),
        (Some(min), None) => notes.push(format!("at least {min} {}", plural(min))),
        (None, Some(max)) => notes.push(format!("at most {max} {}", plural(max))),
        (None, None) => {}
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        notes.push("items are unique".to_owned());
    }
    if let Some(default) = schema.get("default").filter(|value| !value.is_null()) {
        let text = default.to_string();
        if text.chars().count() <= 40 {
            notes.push(format!("default: {text}"));
        }
    }
    notes
}

/// Whether a `type` value is a type name or a list of them.
fn is_type(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Array(kinds) => !kinds.is_empty() && kinds.iter().all(Value::is_string),
        _ => false,
    }
}

fn has_type(out: &Map<String, Value>, kind: &str) -> bool {
    match out.get("type") {
        Some(Value::String(name)) => name == kind,
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == kind),
        _ => false,
    }
}

fn is_object(out: &Map<String, Value>, schema: &Map<String, Value>) -> bool {
    has_type(out, "object")
        || (!out.contains_key("type")
            && (schema.contains_key("properties") || schema.contains_key("additionalProperties")))
}

fn is_array(out: &Map<String, Value>, schema: &Map<String, Value>) -> bool {
    has_type(out, "array")
        || (!out.contains_key("type")
            && (schema.contains_key("items") || schema.contains_key("prefixItems")))
}

/// Whether a rewritten schema says what its values are (a type, a set of values, a union
/// or a reference).
fn constrains_kind(out: &Map<String, Value>) -> bool {
    ["type", "enum", "const", "anyOf", "$ref"]
        .iter()
        .any(|keyword| out.contains_key(*keyword))
}

/// A value of any scalar type: what strict mode can say of a value of any type.
fn any_scalar() -> Map<String, Value> {
    let mut any = Map::new();
    any.insert(
        "anyOf".into(),
        json!([{"type": "string"}, {"type": "number"}, {"type": "boolean"}]),
    );
    any
}

/// Whether `null` is already a valid value of the schema.
fn allows_null(schema: &Map<String, Value>) -> bool {
    has_type(schema, "null")
        || schema.get("const") == Some(&Value::Null)
        || matches!(schema.get("enum"), Some(Value::Array(values)) if values.contains(&Value::Null))
        || matches!(schema.get("anyOf"), Some(Value::Array(branches))
            if branches.iter().any(|branch| matches!(branch, Value::Object(b) if allows_null(b))))
}

/// The schema, or `null`: `null` added to its `type`, a `{"type": "null"}` branch added to its
/// union, or the schema wrapped in one (its description and title on the wrapper).
fn make_nullable(mut schema: Map<String, Value>) -> Map<String, Value> {
    if allows_null(&schema) {
        return schema;
    }
    let plain = !["enum", "const", "anyOf", "$ref"]
        .iter()
        .any(|keyword| schema.contains_key(*keyword));
    match schema.get_mut("type") {
        Some(Value::String(kind)) if plain => {
            let kind = std::mem::take(kind);
            schema.insert("type".into(), json!([kind, "null"]));
            return schema;
        }
        Some(Value::Array(kinds)) if plain => {
            kinds.push(json!("null"));
            return schema;
        }
        _ => {}
    }
    if !schema.contains_key("type")
        && let Some(Value::Array(branches)) = schema.get_mut("anyOf")
    {
        branches.push(json!({"type": "null"}));
        return schema;
    }
    let mut wrapper = Map::new();
    for keyword in ["title", "description"] {
        if let Some(value) = schema.remove(keyword) {
            wrapper.insert(keyword.into(), value);
        }
    }
    let inner = Value::Object(schema);
    let mut out = Map::new();
    out.insert("anyOf".into(), json!([inner, {"type": "null"}]));
    out.extend(wrapper);
    out
}

#[cfg(test)]
mod tests;

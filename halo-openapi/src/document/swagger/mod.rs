//! Swagger 2.0 converted to OpenAPI 3.0.3, tolerantly: what is odd is read the way it was
//! most likely meant, and noted.
//!
//! `host`, `basePath` and `schemes` become `servers`; `definitions`, `parameters`,
//! `responses` and `securityDefinitions` become `components` (every `$ref` rewritten to
//! match); a body parameter becomes a `requestBody` in the media types the operation
//! consumes, `formData` parameters a form; the type and bounds of the other parameters a
//! `schema`, their `collectionFormat` a `style`; a response's `schema` its `content` in the
//! media types the operation produces. Extensions (`x-…`) are kept where they stand.
//!
//! Each part in its file: [`schema`] objects, [`parameters`] that are not a body, the
//! [`body`], [`responses`], [`security`] schemes, and each [`operation`] of a path item.

mod body;
mod operation;
mod parameters;
mod responses;
mod schema;
mod security;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use self::operation::{Context, media_types};
use super::notes::{Note, Notes, pointer};

/// The OpenAPI 3.0.3 document of the Swagger 2.0 document `document`.
pub(super) fn convert(document: &Value, notes: &mut Notes) -> Value {
    notes.note(Note::Converted, String::new);
    let empty = Map::new();
    let source = document.as_object().unwrap_or(&empty);
    let mut out = Map::new();
    out.insert("openapi".to_owned(), Value::String("3.0.3".to_owned()));
    for (key, value) in source {
        let kept = matches!(key.as_str(), "info" | "tags" | "externalDocs" | "security")
            || key.starts_with("x-");
        if kept {
            out.insert(key.clone(), value.clone());
        }
    }
    if let Some(servers) = servers(source, notes) {
        out.insert("servers".to_owned(), servers);
    }
    let context = Context {
        document,
        consumes: media_types(source.get("consumes")).unwrap_or_default(),
        produces: media_types(source.get("produces")).unwrap_or_default(),
    };
    let components = components(source, &context, notes);
    if !components.is_empty() {
        out.insert("components".to_owned(), Value::Object(components));
    }
    let mut paths = Map::new();
    if let Some(Value::Object(items)) = source.get("paths") {
        for (key, item) in items {
            let item = match item {
                Value::Object(item) => {
                    operation::path_item(item, &context, &pointer("/paths", key), notes)
                }
                other => other.clone(),
            };
            paths.insert(key.clone(), item);
        }
    }
    out.insert("paths".to_owned(), Value::Object(paths));
    Value::Object(out)
}

/// `servers` from `host`, `basePath` and `schemes` (HTTPS when the document names none).
fn servers(source: &Map<String, Value>, notes: &mut Notes) -> Option<Value> {
    let base = source.get("basePath").and_then(Value::as_str).unwrap_or("");
    let base = base.trim_end_matches('/');
    let urls: Vec<String> = match source.get("host").and_then(Value::as_str) {
        Some(host) => {
            let schemes = media_types(source.get("schemes")).unwrap_or_default();
            let schemes = if schemes.is_empty() {
                vec!["https".to_owned()]
            } else {
                schemes
            };
            schemes
                .iter()
                .map(|scheme| format!("{scheme}://{host}{base}"))
                .collect()
        }
        None if base.is_empty() => return None,
        None => {
            notes.note(Note::NoHost, || "/host".to_owned());
            vec![base.to_owned()]
        }
    };
    let servers = urls.into_iter().map(|url| {
        let mut server = Map::new();
        server.insert("url".to_owned(), Value::String(url));
        Value::Object(server)
    });
    Some(Value::Array(servers.collect()))
}

/// `components` from `definitions`, the shared `parameters` (but bodies and form fields,
/// which the operations that use them take in), `responses` and `securityDefinitions`.
fn components(
    source: &Map<String, Value>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Map<String, Value> {
    let mut out = Map::new();
    let object = |key: &str| source.get(key).and_then(Value::as_object);
    if let Some(definitions) = object("definitions") {
        let schemas = definitions.iter().map(|(name, definition)| {
            let at = pointer("/definitions", name);
            (name.clone(), schema::schema(definition, &at, notes))
        });
        out.insert("schemas".to_owned(), Value::Object(schemas.collect()));
    }
    if let Some(shared) = object("parameters") {
        let mut parameters = Map::new();
        for (name, parameter) in shared {
            let Value::Object(parameter) = parameter else {
                continue;
            };
            let place = parameter.get("in").and_then(Value::as_str);
            if !matches!(place, Some("body" | "formData")) {
                let at = pointer("/parameters", name);
                let converted = parameters::parameter(parameter, &at, notes);
                parameters.insert(name.clone(), converted);
            }
        }
        if !parameters.is_empty() {
            out.insert("parameters".to_owned(), Value::Object(parameters));
        }
    }
    if let Some(shared) = object("responses") {
        let converted = shared.iter().map(|(name, response)| {
            let at = pointer("/responses", name);
            let response = match response {
                Value::Object(response) => {
                    responses::response(response, &context.produces, &at, notes)
                }
                other => other.clone(),
            };
            (name.clone(), response)
        });
        out.insert("responses".to_owned(), Value::Object(converted.collect()));
    }
    if let Some(definitions) = object("securityDefinitions") {
        let schemes = security::schemes(definitions, notes);
        out.insert("securitySchemes".to_owned(), Value::Object(schemes));
    }
    out
}

//! `input`: one entry per parameter, each a self-contained JSON Schema with `in` and
//! `required`, in the order path, query, header, body.

use halo_protocol::{InputField, Location, is_json};
use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::BodySpec;
use super::refs::{Resolver, Unresolved};

/// The input map of an operation from its (path-level and own) parameters and request body,
/// and what a request's body must be.
pub(crate) fn derive(
    resolver: Resolver<'_>,
    path_item: &Value,
    operation: &Value,
) -> Result<(IndexMap<String, InputField>, Option<BodySpec>), Unresolved> {
    let mut params = parameters(resolver, path_item, operation)?;
    params.sort_by_key(|(location, _, _)| rank(*location));
    let mut input: IndexMap<String, InputField> = IndexMap::new();
    for (_, name, field) in params {
        input.insert(name, field);
    }
    let mut spec = None;
    if let Some(body) = operation.get("requestBody") {
        let (fields, body) = body_fields(resolver, resolver.follow(body)?, &input)?;
        for (name, field) in fields {
            input.insert(name, field);
        }
        spec = body;
    }
    Ok((input, spec))
}

/// Path first, then query, then headers.
fn rank(location: Location) -> u8 {
    match location {
        Location::Path => 0,
        Location::Query => 1,
        Location::Header => 2,
        _ => 3,
    }
}

/// Parameters of the operation, overriding path-level ones with the same name and location.
/// Cookie parameters are left out: HALO clients do not place arguments in cookies.
fn parameters(
    resolver: Resolver<'_>,
    path_item: &Value,
    operation: &Value,
) -> Result<Vec<(Location, String, InputField)>, Unresolved> {
    let mut out: Vec<(Location, String, InputField)> = Vec::new();
    let declared = [path_item, operation]
        .into_iter()
        .filter_map(|owner| owner.get("parameters")?.as_array())
        .flatten();
    for parameter in declared {
        let parameter = resolver.follow(parameter)?;
        let Some(name) = parameter.get("name").and_then(Value::as_str) else {
            continue;
        };
        let location = match parameter.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => Location::Header,
            _ => continue,
        };
        let field = parameter_field(resolver, parameter, location)?;
        out.retain(|(l, n, _)| !(*l == location && n == name));
        out.push((location, name.to_owned(), field));
    }
    Ok(out)
}

fn parameter_field(
    resolver: Resolver<'_>,
    parameter: &Value,
    location: Location,
) -> Result<InputField, Unresolved> {
    let schema = match parameter.get("schema") {
        Some(schema) => resolver.inline(schema)?,
        None => match json_content(parameter.get("content")) {
            Some((_, content)) => content_schema(resolver, content)?,
            None => Value::Object(Map::new()),
        },
    };
    let mut field = InputField::new(schema);
    for keyword in ["description", "deprecated", "example"] {
        if let Some(value) = parameter.get(keyword) {
            field.schema.insert(keyword.to_owned(), value.clone());
        }
    }
    let required = location == Location::Path
        || parameter.get("required").and_then(Value::as_bool) == Some(true);
    Ok(field.located(location).required(required))
}

/// A body's input entries, and what the body must be.
type BodyFields = (Vec<(String, InputField)>, Option<BodySpec>);

/// The body as input entries: the properties of a JSON object body, one entry each; any
/// other body (an array, a scalar, a union, a non-JSON media type, or an object whose
/// property names clash with a parameter) as one entry named `body` (`request_body` when a
/// parameter already has that name).
fn body_fields(
    resolver: Resolver<'_>,
    body: &Value,
    params: &IndexMap<String, InputField>,
) -> Result<BodyFields, Unresolved> {
    let body_required = body.get("required").and_then(Value::as_bool) == Some(true);
    let content = body.get("content");
    let (media_type, schema) = match json_content(content) {
        Some((media_type, content)) => (media_type, content_schema(resolver, content)?),
        None => match content
            .and_then(Value::as_object)
            .and_then(|c| c.iter().next())
        {
            Some((media_type, content)) => {
                (media_type.as_str(), content_schema(resolver, content)?)
            }
            None => return Ok((Vec::new(), None)),
        },
    };
    let is_json = is_json(media_type);
    let mut spec = BodySpec {
        schema: schema.clone(),
        media_type: media_type.to_owned(),
        required: body_required,
        entry: None,
    };
    let mut schema = schema;
    let splits = is_json
        && flat_properties(&schema)
            .is_some_and(|properties| !properties.keys().any(|name| params.contains_key(name)));
    if splits
        && let Value::Object(map) = &mut schema
        && let Some(Value::Object(properties)) = map.remove("properties")
    {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let defs = map.get("$defs");
        let fields = properties
            .into_iter()
            .map(|(name, property)| {
                let required = body_required && required.contains(&name.as_str());
                let field = InputField::new(with_defs(property, defs))
                    .located(Location::Body)
                    .required(required);
                (name, field)
            })
            .collect();
        return Ok((fields, Some(spec)));
    }
    let mut field = InputField::new(schema);
    if let Some(description) = body.get("description") {
        field
            .schema
            .entry("description")
            .or_insert_with(|| description.clone());
    }
    if !is_json {
        field.schema.insert(
            "contentMediaType".to_owned(),
            Value::String(media_type.to_owned()),
        );
    }
    let name = ["body", "request_body"]
        .into_iter()
        .find(|name| !params.contains_key(*name))
        .unwrap_or("_body");
    spec.entry = Some(name.to_owned());
    Ok((
        vec![(
            name.to_owned(),
            field.located(Location::Body).required(body_required),
        )],
        Some(spec),
    ))
}

/// The properties of a plain object schema, one that a client can rebuild from its parts.
fn flat_properties(schema: &Value) -> Option<&Map<String, Value>> {
    let composed = ["allOf", "anyOf", "oneOf", "not", "if", "patternProperties"]
        .iter()
        .any(|keyword| schema.get(keyword).is_some());
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    if composed || !is_object {
        return None;
    }
    schema.get("properties")?.as_object()
}

/// A property schema that may point into the body's `$defs` carries them along, so each
/// entry stands alone.
fn with_defs(mut property: Value, defs: Option<&Value>) -> Value {
    let Some(defs) = defs else { return property };
    if mentions_defs(&property)
        && let Value::Object(map) = &mut property
    {
        map.insert("$defs".to_owned(), defs.clone());
    }
    property
}

/// Whether some `$ref` in `value` points into `#/$defs/`.
fn mentions_defs(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(key, inner)| match inner {
            Value::String(reference) => key == "$ref" && reference.starts_with("#/$defs/"),
            _ => mentions_defs(inner),
        }),
        Value::Array(items) => items.iter().any(mentions_defs),
        _ => false,
    }
}

/// The first JSON media type of a `content` map.
pub(crate) fn json_content(content: Option<&Value>) -> Option<(&str, &Value)> {
    content?
        .as_object()?
        .iter()
        .find(|(media_type, _)| is_json(media_type))
        .map(|(media_type, content)| (media_type.as_str(), content))
}

/// The inlined schema of one media type object (`{}` when it has none).
pub(crate) fn content_schema(resolver: Resolver<'_>, content: &Value) -> Result<Value, Unresolved> {
    let content = resolver.follow(content)?;
    match content.get("schema") {
        Some(schema) => resolver.inline(schema),
        None => Ok(Value::Object(Map::new())),
    }
}

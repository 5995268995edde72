//! `input`: one entry per parameter, each a self-contained JSON Schema with `in` and
//! `required`, in the order path, query, header, body.

use halo_protocol::{InputField, Location, is_json};
use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::bundle::{Bundler, Direction, Problem, Root};
use crate::validate::BodySpec;

/// The input map of an operation from its (path-level and own) parameters and request body,
/// and what a request's body must be.
pub(crate) fn derive<'d>(
    bundler: &Bundler<'d>,
    path_item: &'d Value,
    operation: &'d Value,
) -> Result<(IndexMap<String, InputField>, Option<BodySpec>), Problem> {
    let mut params = parameters(bundler, path_item, operation)?;
    params.sort_by_key(|(location, _, _)| rank(*location));
    let mut input: IndexMap<String, InputField> = IndexMap::new();
    for (_, name, field) in params {
        input.insert(name, field);
    }
    let mut spec = None;
    if let Some(body) = operation.get("requestBody") {
        let (fields, body) = body_fields(bundler, bundler.follow(body)?, &input)?;
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
fn parameters<'d>(
    bundler: &Bundler<'d>,
    path_item: &'d Value,
    operation: &'d Value,
) -> Result<Vec<(Location, String, InputField)>, Problem> {
    let mut out: Vec<(Location, String, InputField)> = Vec::new();
    for parameter in declared(path_item, operation) {
        let parameter = bundler.follow(parameter)?;
        let Some(name) = parameter.get("name").and_then(Value::as_str) else {
            continue;
        };
        let location = match parameter.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => Location::Header,
            _ => continue,
        };
        let field = parameter_field(bundler, parameter, location)?;
        out.retain(|(l, n, _)| !(*l == location && n == name));
        out.push((location, name.to_owned(), field));
    }
    Ok(out)
}

fn parameter_field<'d>(
    bundler: &Bundler<'d>,
    parameter: &'d Value,
    location: Location,
) -> Result<InputField, Problem> {
    let schema = match parameter_schema(bundler, parameter)? {
        Some(schema) => bundler.schema(schema, Root::Reference, Direction::Input)?,
        None => Value::Object(Map::new()),
    };
    let mut field = InputField::new(schema);
    for keyword in ["description", "deprecated", "example"] {
        if let Some(value) = parameter.get(keyword) {
            field.schema.insert(keyword.to_owned(), value.clone());
        }
    }
    let required = location == Location::Path
        || parameter.get("required").and_then(Value::as_bool) == Some(true);
    let mut field = field.located(location).required(required);
    (field.style, field.explode) = style(parameter);
    Ok(field)
}

/// A body's input entries, and what the body must be.
type BodyFields = (Vec<(String, InputField)>, Option<BodySpec>);

/// The body as input entries: the properties of a JSON object body, one entry each; any
/// other body (an array, a scalar, a union, a non-JSON media type, or an object whose
/// property names clash with a parameter) as one entry named `body` (`request_body` when a
/// parameter already has that name).
fn body_fields<'d>(
    bundler: &Bundler<'d>,
    body: &'d Value,
    params: &IndexMap<String, InputField>,
) -> Result<BodyFields, Problem> {
    let body_required = body.get("required").and_then(Value::as_bool) == Some(true);
    let Some((media_type, content)) = body_content(body) else {
        return Ok((Vec::new(), None));
    };
    let schema = content_schema(bundler, content, Root::Body)?;
    let is_json = is_json(media_type);
    let is_form = halo_protocol::Form::of(media_type).is_some();
    let mut spec = BodySpec {
        schema: schema.clone(),
        media_type: media_type.to_owned(),
        required: body_required,
        entry: None,
    };
    let mut schema = schema;
    let splits = (is_json || is_form)
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
        let encoding = content.get("encoding");
        let fields = properties
            .into_iter()
            .map(|(name, property)| {
                let required = body_required && required.contains(&name.as_str());
                let mut field = InputField::new(property)
                    .located(Location::Body)
                    .required(required);
                if is_form {
                    field.media_type = Some(media_type.to_owned());
                    if let Some(encoding) = encoding.and_then(|e| e.get(&name)) {
                        (field.style, field.explode) = style(encoding);
                    }
                }
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

/// The `style` and `explode` of a parameter or an encoding object, as written.
fn style(object: &Value) -> (Option<String>, Option<bool>) {
    (
        object
            .get("style")
            .and_then(Value::as_str)
            .map(str::to_owned),
        object.get("explode").and_then(Value::as_bool),
    )
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

/// The first JSON media type of a `content` map.
pub(crate) fn json_content(content: Option<&Value>) -> Option<(&str, &Value)> {
    content?
        .as_object()?
        .iter()
        .find(|(media_type, _)| is_json(media_type))
        .map(|(media_type, content)| (media_type.as_str(), content))
}

/// The bundled schema of one media type object (`{}` when it has none).
fn content_schema<'d>(
    bundler: &Bundler<'d>,
    content: &'d Value,
    root: Root,
) -> Result<Value, Problem> {
    match content_root(bundler, content)? {
        Some(schema) => bundler.schema(schema, root, Direction::Input),
        None => Ok(Value::Object(Map::new())),
    }
}

/// The schema of one media type object, as the document writes it.
pub(crate) fn content_root<'d>(
    bundler: &Bundler<'d>,
    content: &'d Value,
) -> Result<Option<&'d Value>, Problem> {
    Ok(bundler.follow(content)?.get("schema"))
}

/// The parameters of an operation as declared: the path item's, then the operation's own.
fn declared<'d>(path_item: &'d Value, operation: &'d Value) -> impl Iterator<Item = &'d Value> {
    [path_item, operation]
        .into_iter()
        .filter_map(|owner| owner.get("parameters")?.as_array())
        .flatten()
}

/// A parameter's schema: its own, or that of its JSON `content`.
fn parameter_schema<'d>(
    bundler: &Bundler<'d>,
    parameter: &'d Value,
) -> Result<Option<&'d Value>, Problem> {
    match parameter.get("schema") {
        Some(schema) => Ok(Some(schema)),
        None => match json_content(parameter.get("content")) {
            Some((_, content)) => content_root(bundler, content),
            None => Ok(None),
        },
    }
}

/// The media type a request body is described by: its first JSON one, else its first.
fn body_content(body: &Value) -> Option<(&str, &Value)> {
    let content = body.get("content");
    json_content(content).or_else(|| {
        content
            .and_then(Value::as_object)
            .and_then(|c| c.iter().next())
            .map(|(media_type, content)| (media_type.as_str(), content))
    })
}

/// Every schema [`derive`] bundles for an operation, as the document writes it, for
/// [`Bundler::survey`].
pub(crate) fn roots<'d>(
    bundler: &Bundler<'d>,
    path_item: &'d Value,
    operation: &'d Value,
    roots: &mut Vec<&'d Value>,
) -> Result<(), Problem> {
    for parameter in declared(path_item, operation) {
        if let Some(schema) = parameter_schema(bundler, bundler.follow(parameter)?)? {
            roots.push(schema);
        }
    }
    if let Some(body) = operation.get("requestBody")
        && let Some((_, content)) = body_content(bundler.follow(body)?)
        && let Some(schema) = content_root(bundler, content)?
    {
        roots.push(schema);
    }
    Ok(())
}

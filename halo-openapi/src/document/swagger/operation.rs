//! A Swagger 2.0 path item and its operations: the parameters of the path and of the
//! operation together (the operation's own winning), split into OpenAPI 3.0 parameters and
//! a request body; the responses in the media types the operation produces.

use serde_json::{Map, Value};

use super::super::notes::{Note, Notes, pointer};
use super::{body, parameters, responses, schema};

/// The operation keys of a Swagger 2.0 path item.
const OPERATIONS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// What every operation of a document shares.
#[derive(Debug)]
pub(super) struct Context<'d> {
    /// The Swagger 2.0 document.
    pub(super) document: &'d Value,
    /// The document's media types, for operations that name none.
    pub(super) consumes: Vec<String>,
    pub(super) produces: Vec<String>,
}

/// The media types of a `consumes` or `produces` list.
pub(super) fn media_types(value: Option<&Value>) -> Option<Vec<String>> {
    let list = value?.as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// The path item at `at`, as OpenAPI 3.0 writes it.
pub(super) fn path_item(
    item: &Map<String, Value>,
    context: &Context<'_>,
    at: &str,
    notes: &mut Notes,
) -> Value {
    let shared: Vec<(&Value, String)> = item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, parameter)| {
            (
                parameter,
                pointer(&pointer(at, "parameters"), &i.to_string()),
            )
        })
        .collect();
    let mut out = Map::new();
    for (key, value) in item {
        match (key.as_str(), value) {
            (method, Value::Object(operation)) if OPERATIONS.contains(&method) => {
                let at = pointer(at, method);
                let operation = self::operation(operation, &shared, context, &at, notes);
                out.insert(key.clone(), operation);
            }
            ("$ref", _) => {
                out.insert(key.clone(), value.clone());
            }
            (key, _) if key.starts_with("x-") => {
                out.insert(key.to_owned(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// A parameter of an operation, its references followed.
struct Parameter<'d> {
    object: &'d Map<String, Value>,
    /// Where it is written, for notes.
    at: String,
    /// The reference to `#/components/parameters/…` it stays, when it was one to a shared
    /// parameter that is not a body.
    reference: Option<String>,
}

impl Parameter<'_> {
    fn field(&self, key: &str) -> Option<&str> {
        self.object.get(key).and_then(Value::as_str)
    }
}

fn operation(
    operation: &Map<String, Value>,
    shared: &[(&Value, String)],
    context: &Context<'_>,
    at: &str,
    notes: &mut Notes,
) -> Value {
    let consumes =
        media_types(operation.get("consumes")).unwrap_or_else(|| context.consumes.clone());
    let produces =
        media_types(operation.get("produces")).unwrap_or_else(|| context.produces.clone());
    let own = operation.get("parameters").and_then(Value::as_array);
    let own = own.into_iter().flatten().enumerate().map(|(i, parameter)| {
        (
            parameter,
            pointer(&pointer(at, "parameters"), &i.to_string()),
        )
    });
    let mut out = Map::new();
    let mut listed: Vec<Value> = Vec::new();
    let mut parameters: Vec<Parameter<'_>> = Vec::new();
    for (value, at) in shared.iter().cloned().chain(own) {
        match resolve(value, context) {
            Ok(Some((object, reference))) => {
                let parameter = Parameter {
                    object,
                    at,
                    reference,
                };
                if parameter.field("name").is_none() {
                    notes.note(Note::BadParameter, || parameter.at.clone());
                    continue;
                }
                // The operation's own parameter replaces the path's of the same name and place.
                parameters.retain(|known| {
                    (known.field("name"), known.field("in"))
                        != (parameter.field("name"), parameter.field("in"))
                });
                parameters.push(parameter);
            }
            Ok(None) => notes.note(Note::BadParameter, || at),
            Err(reference) => {
                notes.note(Note::UnresolvedParameter, || at);
                let mut unresolved = Map::new();
                unresolved.insert("$ref".to_owned(), Value::String(reference));
                listed.push(Value::Object(unresolved));
            }
        }
    }
    let mut bodies = Vec::new();
    let mut fields = Vec::new();
    for parameter in &parameters {
        match parameter.field("in") {
            Some("body") => bodies.push(parameter),
            Some("formData") => fields.push((parameter.object, parameter.at.clone())),
            Some("query" | "header" | "path") => listed.push(match &parameter.reference {
                Some(reference) => {
                    let mut shared = Map::new();
                    shared.insert("$ref".to_owned(), Value::String(reference.clone()));
                    Value::Object(shared)
                }
                None => parameters::parameter(parameter.object, &parameter.at, notes),
            }),
            _ => notes.note(Note::UnknownIn, || pointer(&parameter.at, "in")),
        }
    }
    if !listed.is_empty() {
        out.insert("parameters".to_owned(), Value::Array(listed));
    }
    if let Some(first) = bodies.first() {
        if bodies.len() > 1 {
            notes.note(Note::TwoBodies, || bodies[1].at.clone());
        }
        if let Some((_, at)) = fields.first() {
            notes.note(Note::BodyAndForm, || at.clone());
        }
        let body = body::body(first.object, &consumes, &first.at, notes);
        out.insert("requestBody".to_owned(), body);
    } else if !fields.is_empty() {
        out.insert(
            "requestBody".to_owned(),
            body::form(&fields, &consumes, notes),
        );
    }
    let responses = match operation.get("responses") {
        Some(Value::Object(responses)) => {
            responses::responses(responses, &produces, &pointer(at, "responses"), notes)
        }
        _ => Value::Object(Map::new()),
    };
    out.insert("responses".to_owned(), responses);
    for (key, value) in operation {
        let kept = matches!(
            key.as_str(),
            "tags"
                | "summary"
                | "description"
                | "externalDocs"
                | "operationId"
                | "deprecated"
                | "security"
        ) || key.starts_with("x-");
        if kept {
            out.insert(key.clone(), value.clone());
        } else if key == "schemes" {
            notes.note(Note::OperationSchemes, || pointer(at, "schemes"));
        }
    }
    Value::Object(out)
}

/// A parameter's object, and the reference it stays (see [`Parameter::reference`]).
type Followed<'d> = (&'d Map<String, Value>, Option<String>);

/// A parameter as an object, its reference followed within the document: `Ok(None)` when it
/// is not an object, `Err` with the reference (rewritten) when that points nowhere.
fn resolve<'d>(value: &'d Value, context: &Context<'d>) -> Result<Option<Followed<'d>>, String> {
    let Some(Value::String(target)) = value.get("$ref") else {
        return Ok(value.as_object().map(|object| (object, None)));
    };
    let found = target
        .strip_prefix('#')
        .and_then(|pointer| context.document.pointer(pointer))
        .and_then(Value::as_object);
    let Some(object) = found else {
        return Err(schema::reference(target));
    };
    // A shared parameter that is not a body stays shared, under `#/components/parameters`.
    let place = object.get("in").and_then(Value::as_str);
    let stays = target.starts_with("#/parameters/") && !matches!(place, Some("body" | "formData"));
    Ok(Some((object, stays.then(|| schema::reference(target)))))
}

//! A HALO upstream: discovered as halo-client discovers any HALO API (`OPTIONS /`, then each
//! path's schemas), and written back as the OpenAPI document it describes, so that it is
//! compiled, governed and served like any other upstream. Its `why`, effects, limits,
//! resilience, next steps, examples and lifecycle travel as `x-halo-*` extensions; the
//! definitions each schema carries under `$defs`, and those a tool's schemas share, become
//! components, one per definition.

use halo_client::{Client, Credential};
use halo_protocol::{
    InputField, Location, ToolSchema, implied_location, standalone, template_variables,
    whole_body_entry,
};
use reqwest::Url;
use serde_json::{Map, Value, json};

use super::definitions::Definitions;
use crate::config::UpstreamSpec;

/// Discovers the HALO API at `base` with the upstream's credential, and writes the OpenAPI
/// document of the tools it shows the gateway.
pub(super) async fn document(base: &Url, spec: &UpstreamSpec) -> Result<Value, String> {
    let client = client(base, spec)?;
    let manifest = client
        .discover(&[])
        .await
        .map_err(|e| format!("cannot discover it: {e}"))?;
    let schemas = client
        .describe_all(&manifest.tools)
        .await
        .map_err(|e| format!("cannot read its tools' schemas: {e}"))?;
    let title = match manifest.api.as_str() {
        "" => "HALO API",
        name => name,
    };
    let names = manifest.tools.iter().map(|tool| tool.name.as_str());
    Ok(openapi(title, names.zip(schemas.iter())))
}

/// A client of the HALO API at `base` with the upstream's credential (its one header, or its
/// OAuth client): what discovers it, and what streams its calls.
pub(crate) fn client(base: &Url, spec: &UpstreamSpec) -> Result<Client, String> {
    let mut builder = Client::builder(base.as_str());
    if let Some(oauth) = &spec.oauth {
        builder = builder.credential(Credential::from(oauth.clone()));
    } else if let Some((name, value)) = spec.headers.iter().next() {
        let value = value
            .to_str()
            .map_err(|_| "its header is not text".to_owned())?;
        builder = builder.credential(Credential::api_key(name.clone(), value));
    }
    builder
        .build()
        .map_err(|e| format!("cannot make its client: {e}"))
}

/// The OpenAPI 3.1 document of `tools` (each named as its upstream names it).
fn openapi<'a>(title: &str, tools: impl Iterator<Item = (&'a str, &'a ToolSchema)>) -> Value {
    let mut paths = Map::new();
    let mut definitions = Definitions::default();
    for (name, schema) in tools {
        let method = schema.call.method.to_ascii_lowercase();
        let operation = operation(name, schema, &mut definitions);
        let item = paths
            .entry(schema.call.url.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        item[method] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
        "components": {"schemas": definitions.schemas},
    })
}

fn operation(name: &str, schema: &ToolSchema, definitions: &mut Definitions) -> Value {
    let mut operation = Map::new();
    operation.insert("operationId".into(), json!(name));
    if let Some(title) = &schema.title {
        operation.insert("summary".into(), json!(title));
    }
    if !schema.description.is_empty() {
        operation.insert("description".into(), json!(schema.description));
    }
    if !schema.tags.is_empty() {
        operation.insert("tags".into(), json!(schema.tags));
    }
    let whole = whole_body_entry(schema);
    let mut parameters = Vec::new();
    let mut body = BodyParts::default();
    for (field_name, field) in &schema.input {
        // Its definitions, those the tool's schemas share among them.
        let mut entry = standalone(&field.schema, &schema.defs);
        definitions.take(&mut entry);
        let location = field
            .location
            .unwrap_or_else(|| implied_location(&schema.call.url, &schema.call.method, field_name));
        match location {
            Location::Body if Some(field_name.as_str()) == whole => {
                body.whole = Some((entry, field.required, field.media_type.clone()));
            }
            Location::Body => body.property(field_name, entry, field),
            location => parameters.push(parameter(field_name, entry, location, field)),
        }
    }
    // A template variable the input leaves out (halo-fastapi 0.3 lists none) is still an
    // argument of the call: a string in the path.
    for variable in template_variables(&schema.call.url) {
        if !schema.input.contains_key(variable) {
            parameters.push(json!({
                "name": variable, "in": "path", "required": true, "schema": {"type": "string"}
            }));
        }
    }
    if !parameters.is_empty() {
        operation.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(request_body) = body.into_request_body() {
        operation.insert("requestBody".into(), request_body);
    }
    let mut ok = json!({"description": "The tool's result"});
    if let Some(output) = &schema.output {
        let mut output = output.clone();
        if let Value::Object(object) = &mut output {
            *object = standalone(object, &schema.defs);
            definitions.take(object);
        }
        ok["content"] = json!({"application/json": {"schema": output}});
    }
    operation.insert("responses".into(), json!({"200": ok}));
    let mut extend = |key: &str, value: Value| {
        if !value.is_null() && value != json!({}) && value != json!([]) {
            operation.insert(key.to_owned(), value);
        }
    };
    extend("x-halo-why", json!(schema.why));
    extend("x-halo-effects", json!(schema.effects));
    extend("x-halo-limits", json!(schema.limits));
    extend("x-halo-next", json!(schema.next));
    extend("x-halo-examples", json!(schema.examples));
    extend("x-halo-resilience", json!(schema.resilience));
    extend("x-halo-observe", json!(schema.observe));
    extend("x-halo-lifecycle", json!(schema.lifecycle));
    extend("x-halo-stream", json!(schema.stream));
    Value::Object(operation)
}

fn parameter(
    name: &str,
    schema: Map<String, Value>,
    location: Location,
    field: &InputField,
) -> Value {
    let mut parameter = json!({
        "name": name,
        "in": location,
        "schema": schema,
    });
    if field.required || location == Location::Path {
        parameter["required"] = json!(true);
    }
    if let Some(style) = &field.style {
        parameter["style"] = json!(style);
    }
    if let Some(explode) = field.explode {
        parameter["explode"] = json!(explode);
    }
    parameter
}

/// A request body's parts, as entries gave them.
#[derive(Default)]
struct BodyParts {
    /// The whole body, when one entry stands for it: its schema, whether it is required,
    /// its form media type.
    whole: Option<(Map<String, Value>, bool, Option<String>)>,
    properties: Map<String, Value>,
    required: Vec<String>,
    /// A form's media type and each property's encoding.
    media_type: Option<String>,
    encoding: Map<String, Value>,
}

impl BodyParts {
    fn property(&mut self, name: &str, schema: Map<String, Value>, field: &InputField) {
        self.properties
            .insert(name.to_owned(), Value::Object(schema));
        if field.required {
            self.required.push(name.to_owned());
        }
        if let Some(media_type) = &field.media_type {
            self.media_type.get_or_insert_with(|| media_type.clone());
        }
        let mut encoding = Map::new();
        if let Some(style) = &field.style {
            encoding.insert("style".into(), json!(style));
        }
        if let Some(explode) = field.explode {
            encoding.insert("explode".into(), json!(explode));
        }
        if !encoding.is_empty() {
            self.encoding
                .insert(name.to_owned(), Value::Object(encoding));
        }
    }

    fn into_request_body(self) -> Option<Value> {
        if let Some((mut schema, required, media_type)) = self.whole {
            let media_type = schema
                .remove("contentMediaType")
                .and_then(|m| m.as_str().map(str::to_owned))
                .or(media_type)
                .unwrap_or_else(|| "application/json".to_owned());
            return Some(json!({
                "required": required,
                "content": {media_type: {"schema": schema}},
            }));
        }
        if self.properties.is_empty() {
            return None;
        }
        let required = !self.required.is_empty();
        let mut schema = json!({"type": "object", "properties": self.properties});
        if required {
            schema["required"] = json!(self.required);
        }
        let media_type = self
            .media_type
            .unwrap_or_else(|| "application/json".to_owned());
        let mut content = json!({"schema": schema});
        if !self.encoding.is_empty() {
            content["encoding"] = Value::Object(self.encoding);
        }
        Some(json!({"required": required, "content": {media_type: content}}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(value: Value) -> ToolSchema {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn schemas_become_the_operations_they_describe() {
        let create = schema(json!({
            "description": "Add a book",
            "call": {"method": "POST", "url": "/api/books"},
            "tags": ["books"],
            "input": {
                "dry_run": {"type": "boolean", "in": "query"},
                "title": {"type": "string", "in": "body", "required": true},
                "author": {"$ref": "#/$defs/Author", "in": "body",
                           "$defs": {"Author": {"type": "object", "properties": {"name": {"type": "string"}}}}}
            },
            "output": {"$ref": "#/$defs/Book", "$defs": {"Book": {"type": "object"}}},
            "why": "Use to add a book",
            "limits": {"rate": "5/minute", "idempotency_key": "Idempotency-Key"},
            "effects": {"reversible": true}
        }));
        let get = schema(json!({
            "description": "One book",
            "call": {"method": "GET", "url": "/api/books/{id}"},
            "input": {"id": {"type": "integer", "in": "path", "required": true},
                      "author": {"$ref": "#/$defs/Author", "in": "query",
                                 "$defs": {"Author": {"type": "string"}}}}
        }));
        // Its body and output share a definition, written once at the tool's root.
        let tags = schema(json!({
            "call": {"method": "PUT", "url": "/api/books/{id}/tags"},
            "input": {"id": {"type": "integer", "in": "path", "required": true},
                      "body": {"type": "array", "items": {"$ref": "#/$defs/Tag"}, "in": "body", "required": true}},
            "output": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
            "$defs": {"Tag": {"type": "string", "maxLength": 20}}
        }));
        let document = openapi(
            "Books",
            [
                ("create_book", &create),
                ("get_book", &get),
                ("tag_book", &tags),
            ]
            .into_iter(),
        );
        let post = &document["paths"]["/api/books"]["post"];
        assert_eq!(post["operationId"], "create_book");
        assert_eq!(
            post["parameters"],
            json!([{"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}])
        );
        assert_eq!(
            post["requestBody"],
            json!({"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["title"],
                "properties": {"title": {"type": "string"}, "author": {"$ref": "#/components/schemas/Author"}}}}}})
        );
        assert_eq!(post["x-halo-why"], "Use to add a book");
        assert_eq!(post["x-halo-limits"]["rate"], "5/minute");
        assert_eq!(
            post["responses"]["200"]["content"]["application/json"]["schema"],
            json!({"$ref": "#/components/schemas/Book"})
        );
        // Two definitions of one name: the second is `_2`.
        let parameters = document["paths"]["/api/books/{id}"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let author = parameters.iter().find(|p| p["name"] == "author").unwrap();
        assert_eq!(
            author["schema"],
            json!({"$ref": "#/components/schemas/Author_2"})
        );
        assert_eq!(
            document["components"]["schemas"]["Author_2"],
            json!({"type": "string"})
        );
        let put = &document["paths"]["/api/books/{id}/tags"]["put"];
        let tag = json!({"type": "array", "items": {"$ref": "#/components/schemas/Tag"}});
        assert_eq!(
            put["requestBody"]["content"]["application/json"]["schema"],
            tag
        );
        assert_eq!(
            put["responses"]["200"]["content"]["application/json"]["schema"],
            tag
        );
        assert_eq!(
            document["components"]["schemas"]["Tag"],
            json!({"type": "string", "maxLength": 20})
        );
        // What the layer compiles from it is what the upstream serves.
        let registry = halo_openapi::Registry::builder(&document).build().unwrap();
        let names: Vec<&str> = registry.tools().map(|t| t.name()).collect();
        assert_eq!(names, ["create_book", "get_book", "tag_book"]);
    }
}

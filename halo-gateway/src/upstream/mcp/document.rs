//! An MCP server's tools written as the OpenAPI document they amount to, so that they are
//! compiled, governed and served like any other upstream's operations: each tool is
//! `POST /<tool>`, its body the tool's `inputSchema`, its answer its `outputSchema`, and its
//! annotations HALO's declarations (`readOnlyHint` a `read` tag, `destructiveHint` an
//! irreversible effect, `idempotentHint` an idempotent call).

use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use crate::upstream::definitions::Definitions;

/// The OpenAPI 3.1 document of `tools`, titled `title`, and what it had to change.
pub(crate) fn openapi(title: &str, tools: &[Tool]) -> (Value, Vec<String>) {
    let mut paths = Map::new();
    let mut notes = Vec::new();
    let mut definitions = Definitions::default();
    for tool in tools {
        let Some(segment) = segment(&tool.name) else {
            notes.push(format!(
                "tool `{}` was left out: its name cannot be a path segment",
                tool.name.escape_debug()
            ));
            continue;
        };
        let path = format!("/{segment}");
        if paths.contains_key(&path) {
            notes.push(format!(
                "tool `{segment}` is listed twice: the first is served"
            ));
            continue;
        }
        let operation = operation(tool, &mut definitions, &mut notes);
        paths.insert(path, json!({"post": operation}));
    }
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
        "components": {"schemas": definitions.schemas},
    });
    (document, notes)
}

/// A tool's name as the last segment of its path: MCP's names (`[A-Za-z0-9_.-]`, 1 to 128)
/// are; anything else a server sends is not served.
fn segment(name: &str) -> Option<&str> {
    let valid = !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    valid.then_some(name)
}

fn operation(tool: &Tool, definitions: &mut Definitions, notes: &mut Vec<String>) -> Value {
    let mut operation = Map::new();
    operation.insert("operationId".into(), json!(tool.name));
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
    if let Some(title) = title {
        operation.insert("summary".into(), json!(title));
    }
    if let Some(description) = tool.description.as_deref().filter(|d| !d.is_empty()) {
        operation.insert("description".into(), json!(description));
    }
    // Any MCP tool may report progress when asked: its calls stream `tool_progress` to a
    // caller that streams (over HTTP, or `/mcp` with a progress token).
    operation.insert("x-halo-stream".into(), json!({"events": ["tool_progress"]}));
    let hints = tool.annotations.as_ref();
    if hints.and_then(|h| h.read_only_hint) == Some(true) {
        operation.insert("tags".into(), json!(["read"]));
    }
    // A tool that requires no argument may be called without a body (MCP's `arguments` is
    // optional); its arguments are then none.
    let required = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|required| !required.is_empty());
    let input = schema(
        &tool.input_schema,
        (&tool.name, "inputSchema"),
        definitions,
        notes,
    );
    operation.insert(
        "requestBody".into(),
        json!({"required": required, "content": {"application/json": {"schema": input}}}),
    );
    let mut ok = json!({"description": "The tool's result"});
    if let Some(output) = &tool.output_schema {
        let output = schema(output, (&tool.name, "outputSchema"), definitions, notes);
        ok["content"] = json!({"application/json": {"schema": output}});
    }
    operation.insert("responses".into(), json!({"200": ok}));
    if hints.and_then(|h| h.destructive_hint) == Some(true) {
        operation.insert("x-halo-effects".into(), json!({"reversible": false}));
    }
    if hints.and_then(|h| h.idempotent_hint) == Some(true) {
        operation.insert("x-halo-limits".into(), json!({"idempotent": true}));
    }
    Value::Object(operation)
}

/// A tool's schema (`which` of `tool`) as OpenAPI 3.1's JSON Schema (2020-12) reads it, in
/// the document: its `$schema` (MCP servers often write draft-07's) left out, draft-07's
/// `definitions` read as `$defs`, and its definitions moved into the components.
fn schema(
    schema: &Map<String, Value>,
    (tool, which): (&str, &str),
    definitions: &mut Definitions,
    notes: &mut Vec<String>,
) -> Value {
    let mut schema = schema.clone();
    schema.remove("$schema");
    if let Some(old) = schema.remove("definitions") {
        if schema.contains_key("$defs") {
            notes.push(format!(
                "tool `{tool}`: its {which} has both `definitions` and `$defs`; `definitions` \
                 was left out"
            ));
        } else {
            schema.insert("$defs".into(), old);
            let mut value = Value::Object(std::mem::take(&mut schema));
            crate::references::rewrite(&mut value, &|reference| {
                let name = reference.strip_prefix("#/definitions/")?;
                Some(format!("#/$defs/{name}"))
            });
            if let Value::Object(rewritten) = value {
                schema = rewritten;
            }
        }
    }
    definitions.take(&mut schema);
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tools_become_operations_with_their_hints() {
        let tools = [
            tool(json!({
                "name": "echo", "description": "Echoes back the input",
                "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
                    "type": "object", "properties": {"message": {"type": "string"}},
                    "required": ["message"]},
                "annotations": {"readOnlyHint": true, "idempotentHint": true}
            })),
            tool(json!({
                "name": "delete_entities", "title": "Delete",
                "inputSchema": {"type": "object",
                    "properties": {"names": {"type": "array", "items": {"$ref": "#/definitions/Name"}}},
                    "definitions": {"Name": {"type": "string"}}},
                "outputSchema": {"type": "object", "properties": {"deleted": {"type": "integer"}}},
                "annotations": {"destructiveHint": true}
            })),
            tool(json!({"name": "bad name", "inputSchema": {"type": "object"}})),
        ];
        let (document, notes) = openapi("Memory", &tools);
        let echo = &document["paths"]["/echo"]["post"];
        assert_eq!(echo["operationId"], "echo");
        assert_eq!(echo["tags"], json!(["read"]));
        assert_eq!(echo["x-halo-limits"], json!({"idempotent": true}));
        assert_eq!(echo["requestBody"]["required"], true);
        let body = &echo["requestBody"]["content"]["application/json"]["schema"];
        assert!(body.get("$schema").is_none());
        assert_eq!(body["required"], json!(["message"]));
        let delete = &document["paths"]["/delete_entities"]["post"];
        assert_eq!(
            delete["requestBody"]["required"], false,
            "no argument is required"
        );
        assert_eq!(delete["summary"], "Delete");
        assert_eq!(delete["x-halo-effects"], json!({"reversible": false}));
        let body = &delete["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(
            body["properties"]["names"]["items"]["$ref"],
            "#/components/schemas/Name"
        );
        assert_eq!(document["components"]["schemas"]["Name"]["type"], "string");
        assert_eq!(
            delete["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["deleted"]
                ["type"],
            "integer"
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("bad name"));
        // What the layer compiles from it: a tool per MCP tool.
        let registry = halo_openapi::Registry::builder(&document).build().unwrap();
        let mut names: Vec<&str> = registry.tools().map(|t| t.name()).collect();
        names.sort_unstable();
        assert_eq!(names, ["delete_entities", "echo"]);
    }
}

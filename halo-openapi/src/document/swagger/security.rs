//! Swagger 2.0 security definitions as OpenAPI 3.0 security schemes: `basic` as HTTP basic,
//! `apiKey` as it is, `oauth2`'s one flow as a flows object.

use serde_json::{Map, Value};

use super::super::notes::{Note, Notes, pointer};

/// The security schemes of `definitions` (the document's `securityDefinitions`).
pub(super) fn schemes(definitions: &Map<String, Value>, notes: &mut Notes) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, definition) in definitions {
        let Value::Object(definition) = definition else {
            continue;
        };
        match scheme(definition) {
            Some(scheme) => {
                out.insert(name.clone(), Value::Object(scheme));
            }
            None => notes.note(Note::BadSecurity, || pointer("/securityDefinitions", name)),
        }
    }
    out
}

fn scheme(definition: &Map<String, Value>) -> Option<Map<String, Value>> {
    let text = |key: &str| definition.get(key).cloned();
    let mut out = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            out.insert(key.to_owned(), value);
        }
    };
    match definition.get("type").and_then(Value::as_str)? {
        "basic" => {
            put("type", Some(Value::String("http".to_owned())));
            put("scheme", Some(Value::String("basic".to_owned())));
        }
        "apiKey" => {
            put("type", text("type"));
            put("name", text("name"));
            put("in", text("in"));
        }
        "oauth2" => {
            let flow = match definition.get("flow").and_then(Value::as_str)? {
                "implicit" => "implicit",
                "password" => "password",
                "application" => "clientCredentials",
                "accessCode" => "authorizationCode",
                _ => return None,
            };
            let mut settings = Map::new();
            for key in ["authorizationUrl", "tokenUrl"] {
                if let Some(url) = text(key) {
                    settings.insert(key.to_owned(), url);
                }
            }
            let scopes = text("scopes").unwrap_or_else(|| Value::Object(Map::new()));
            settings.insert("scopes".to_owned(), scopes);
            let mut flows = Map::new();
            flows.insert(flow.to_owned(), Value::Object(settings));
            put("type", text("type"));
            put("flows", Some(Value::Object(flows)));
        }
        _ => return None,
    }
    put("description", text("description"));
    for (key, value) in definition {
        if key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
        }
    }
    Some(out)
}

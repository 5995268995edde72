//! `GET /.well-known/oauth-protected-resource`: the protected-resource metadata of RFC 9728,
//! for an API given a [`ProtectedResource`].
//!
//! The document says what the API is as an OAuth 2.0 resource: `resource` (its identifier,
//! which a client passes as RFC 8707's `resource` when it asks for a token, and which the
//! tokens carry as `aud`), `authorization_servers` (their issuer identifiers, whose RFC 8414
//! or OpenID Connect metadata says where to ask), `scopes_supported` (every scope the
//! OpenAPI document's `security` requirements name, at the root or on an operation, sorted)
//! and `bearer_methods_supported` (`header`: the layer reads `Authorization` only), with
//! `resource_name` from `info.title`. It names no tool and no caller, so it is public and
//! the same for everyone.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::auth::ProtectedResource;

/// The media type of the document (RFC 9728 §3.2).
pub(super) const CONTENT_TYPE: &str = "application/json";

/// The document, serialised.
pub(super) fn render(resource: &ProtectedResource, document: &Value) -> Vec<u8> {
    let mut metadata = Map::new();
    metadata.insert("resource".into(), json!(resource.identifier()));
    metadata.insert(
        "authorization_servers".into(),
        json!(resource.authorization_servers().collect::<Vec<_>>()),
    );
    metadata.insert("scopes_supported".into(), json!(scopes(document)));
    metadata.insert("bearer_methods_supported".into(), json!(["header"]));
    if let Some(title) = document
        .pointer("/info/title")
        .and_then(Value::as_str)
        .map(super::one_line)
        .filter(|title| !title.is_empty())
    {
        metadata.insert("resource_name".into(), json!(title));
    }
    serde_json::to_vec(&Value::Object(metadata)).unwrap_or_default()
}

/// Every scope a `security` requirement of `document` names, at the root or on an
/// operation.
fn scopes(document: &Value) -> BTreeSet<&str> {
    let operations = document
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values());
    std::iter::once(document)
        .chain(operations)
        .filter_map(|holder| holder.get("security")?.as_array())
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|requirement| requirement.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scopes_of_every_requirement() {
        let document = json!({
            "info": {"title": "Books\nAPI"},
            "security": [{"oauth": ["books:read"]}],
            "paths": {
                "/books": {
                    "summary": "not an operation",
                    "post": {"security": [{"oauth": ["books:write"]}, {"key": []}]},
                    "delete": {"security": [{"oauth": ["books:write", "admin"]}]},
                },
            },
        });
        let resource = ProtectedResource::new("https://api.example", ["https://id.example"]);
        let rendered: Value = serde_json::from_slice(&render(&resource, &document)).unwrap();
        assert_eq!(
            rendered,
            json!({
                "resource": "https://api.example",
                "authorization_servers": ["https://id.example"],
                "scopes_supported": ["admin", "books:read", "books:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Books API",
            })
        );
    }
}

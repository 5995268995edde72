//! The places an upstream's document says credentials travel: parameters of those names are
//! not inputs of the gateway's tools, and the forwarder never sends a caller's value there.

use serde_json::Value;

/// Where an upstream reads credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Credentials {
    /// Header names (lower case): always `authorization`, `proxy-authorization` and
    /// `cookie`, and those of the document's `apiKey` schemes.
    pub(crate) headers: Vec<String>,
    /// Query parameter names of its `apiKey` schemes.
    pub(crate) query: Vec<String>,
}

impl Credentials {
    /// The places `document`'s security schemes name.
    pub(crate) fn of(document: &Value) -> Self {
        let mut credentials = Self {
            headers: vec![
                "authorization".to_owned(),
                "proxy-authorization".to_owned(),
                "cookie".to_owned(),
            ],
            query: Vec::new(),
        };
        let schemes = document
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object);
        for scheme in schemes.into_iter().flat_map(|s| s.values()) {
            if scheme.get("type").and_then(Value::as_str) != Some("apiKey") {
                continue;
            }
            let Some(name) = scheme.get("name").and_then(Value::as_str) else {
                continue;
            };
            let list = match scheme.get("in").and_then(Value::as_str) {
                Some("header") => &mut credentials.headers,
                Some("query") => &mut credentials.query,
                _ => continue,
            };
            let name = name.to_ascii_lowercase();
            if !list.contains(&name) {
                list.push(name);
            }
        }
        credentials
    }

    /// Whether a parameter (as a document writes one) is a credential: a cookie, or a
    /// header or query parameter of a credential's name. A parameter given by reference is
    /// looked up in `document`.
    fn is_credential(&self, parameter: &Value, document: &Value) -> bool {
        let parameter = match parameter.get("$ref").and_then(Value::as_str) {
            Some(reference) => match reference
                .strip_prefix('#')
                .and_then(|pointer| document.pointer(pointer))
            {
                Some(target) => target,
                None => return false,
            },
            None => parameter,
        };
        let name = parameter
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase);
        match (parameter.get("in").and_then(Value::as_str), name) {
            (Some("cookie"), _) => true,
            (Some("header"), Some(name)) => self.headers.contains(&name),
            (Some("query"), Some(name)) => self.query.contains(&name),
            _ => false,
        }
    }

    /// Removes the credential parameters of a path item's or operation's `parameters`.
    pub(crate) fn strip(&self, object: &mut Value, document: &Value) {
        if let Some(Value::Array(parameters)) = object.get_mut("parameters") {
            parameters.retain(|parameter| !self.is_credential(parameter, document));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_schemes_and_standard_headers_are_credentials() {
        let document = json!({
            "components": {
                "securitySchemes": {
                    "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                    "token": {"type": "apiKey", "in": "query", "name": "token"},
                    "oauth": {"type": "oauth2"}
                },
                "parameters": {"Token": {"name": "token", "in": "query"}}
            }
        });
        let credentials = Credentials::of(&document);
        assert!(credentials.headers.contains(&"x-api-key".to_owned()));
        assert_eq!(credentials.query, ["token"]);
        let mut operation = json!({"parameters": [
            {"name": "q", "in": "query"},
            {"$ref": "#/components/parameters/Token"},
            {"name": "X-API-KEY", "in": "header"},
            {"name": "Authorization", "in": "header"},
            {"name": "session", "in": "cookie"},
            {"name": "X-Request-Id", "in": "header"}
        ]});
        credentials.strip(&mut operation, &document);
        assert_eq!(
            operation,
            json!({"parameters": [{"name": "q", "in": "query"}, {"name": "X-Request-Id", "in": "header"}]})
        );
    }
}

//! `auth` from OpenAPI security requirements joined with the security schemes.

use halo_protocol::{Auth, AuthType};
use serde_json::Value;

/// The credentials an operation needs.
///
/// `requirements` is the operation's `security` array (or the document's when the operation
/// has none): alternatives, each a map of scheme name to scopes. HALO describes one scheme, so
/// the first alternative that names a scheme the document defines wins; an empty alternative
/// (`{}`) before it means the operation can be called anonymously. Returns `None` when
/// nothing is required.
pub(crate) fn derive(requirements: Option<&Value>, schemes: Option<&Value>) -> Option<Auth> {
    for alternative in requirements?.as_array()? {
        let alternative = alternative.as_object()?;
        if alternative.is_empty() {
            return None;
        }
        let known = alternative
            .iter()
            .find_map(|(name, scopes)| Some((schemes?.get(name)?, scopes)));
        if let Some((scheme, scopes)) = known {
            let mut auth = describe(scheme);
            auth.scopes = scopes
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            return Some(auth);
        }
    }
    None
}

/// The HALO shape of one OpenAPI security scheme object.
fn describe(scheme: &Value) -> Auth {
    let text = |key: &str| scheme.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "http" => match text("scheme").to_ascii_lowercase().as_str() {
            "bearer" => Auth::new(AuthType::Bearer),
            "basic" => Auth::new(AuthType::Basic),
            _ => Auth::new(AuthType::Unknown),
        },
        "apiKey" => {
            let mut auth = Auth::new(AuthType::ApiKey);
            if text("in") == "header" {
                auth.header = Some(text("name").to_owned());
            }
            auth
        }
        "oauth2" => {
            let mut auth = Auth::new(AuthType::OAuth);
            auth.token_url = scheme
                .get("flows")
                .and_then(Value::as_object)
                .and_then(|flows| {
                    ["clientCredentials", "password", "authorizationCode"]
                        .iter()
                        .find_map(|flow| flows.get(*flow)?.get("tokenUrl")?.as_str())
                })
                .map(str::to_owned);
            auth
        }
        "openIdConnect" => Auth::new(AuthType::OAuth),
        _ => Auth::new(AuthType::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemes() -> Value {
        json!({
            "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            "basic": {"type": "http", "scheme": "basic"},
            "api_key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "query_key": {"type": "apiKey", "in": "query", "name": "key"},
            "oauth": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://id.example/token", "scopes": {}}}}
        })
    }

    fn auth(requirements: Value) -> Option<Value> {
        derive(Some(&requirements), Some(&schemes())).map(|a| serde_json::to_value(a).unwrap())
    }

    #[test]
    fn maps_each_scheme() {
        assert_eq!(
            auth(json!([{"bearer": ["payments:write"]}])),
            Some(json!({"type": "bearer", "scopes": ["payments:write"]}))
        );
        assert_eq!(auth(json!([{"basic": []}])), Some(json!({"type": "basic"})));
        assert_eq!(
            auth(json!([{"api_key": []}])),
            Some(json!({"type": "apikey", "header": "X-API-Key"}))
        );
        assert_eq!(
            auth(json!([{"query_key": []}])),
            Some(json!({"type": "apikey"}))
        );
        assert_eq!(
            auth(json!([{"oauth": ["a", "b"]}])),
            Some(
                json!({"type": "oauth", "scopes": ["a", "b"], "tokenUrl": "https://id.example/token"})
            )
        );
    }

    #[test]
    fn optional_or_missing_security_needs_nothing() {
        assert_eq!(auth(json!([{}, {"bearer": []}])), None);
        assert_eq!(auth(json!([])), None);
        assert_eq!(derive(None, Some(&schemes())), None);
        assert_eq!(auth(json!([{"unknown_scheme": []}])), None);
        assert_eq!(
            auth(json!([{"unknown_scheme": []}, {"bearer": ["x"]}])),
            Some(json!({"type": "bearer", "scopes": ["x"]}))
        );
    }
}

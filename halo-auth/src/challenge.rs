//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1, RFC 6750 §3): one per kind of security
//! scheme the document defines, all in the API's realm, rendered once when the layer is
//! built.

use http::HeaderValue;
use serde_json::Value;

/// The realm when neither the builder nor the document's title gives a usable one.
const FALLBACK_REALM: &str = "halo";

/// The challenges a layer answers with.
#[derive(Debug, Clone)]
pub struct Challenges {
    /// No credentials where some are needed.
    missing: HeaderValue,
    /// Credentials that are not valid: each `Bearer` challenge says `invalid_token`.
    invalid: HeaderValue,
    /// The realm, quoted, for the challenges made per request.
    realm: String,
    /// The kinds of credential the challenges name, in order.
    kinds: Vec<Kind>,
    /// `, resource_metadata="<url>"` (RFC 9728 §5.1) after every `Bearer` challenge, when
    /// the layer serves a protected-resource metadata document; else empty.
    resource_metadata: String,
}

/// A kind of credential the document's security schemes accept.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bearer,
    Basic,
    /// An API key in the named header.
    ApiKey(String),
}

impl Challenges {
    /// The challenges for the security schemes of `document`
    /// (`components.securitySchemes`), in `realm`, or else in the document's `info.title`.
    pub fn new(document: &Value, realm: Option<&str>) -> Self {
        let title = document.pointer("/info/title").and_then(Value::as_str);
        let realm = [realm, title]
            .into_iter()
            .flatten()
            .map(quoted)
            .find(|quoted| quoted.len() > 2)
            .unwrap_or_else(|| quoted(FALLBACK_REALM));
        let kinds = kinds(document.pointer("/components/securitySchemes"));
        let mut challenges = Self {
            missing: HeaderValue::from_static("Bearer"),
            invalid: HeaderValue::from_static("Bearer"),
            realm,
            kinds,
            resource_metadata: String::new(),
        };
        challenges.render();
        challenges
    }

    /// The same challenges, each `Bearer` one pointing at the protected-resource metadata
    /// document at `url` (RFC 9728 §5.1), where a client finds the authorization servers
    /// that issue tokens for this API.
    #[must_use]
    pub fn with_resource_metadata(mut self, url: &str) -> Self {
        self.resource_metadata = format!(", resource_metadata={}", quoted(url));
        self.render();
        self
    }

    /// Renders the challenges for a missing and for an invalid credential.
    fn render(&mut self) {
        let (realm, metadata) = (&self.realm, &self.resource_metadata);
        let render = |invalid: bool| {
            let text = self
                .kinds
                .iter()
                .map(|kind| match kind {
                    Kind::Bearer if invalid => {
                        format!("Bearer realm={realm}, error=\"invalid_token\"{metadata}")
                    }
                    Kind::Bearer => format!("Bearer realm={realm}{metadata}"),
                    Kind::Basic => format!("Basic realm={realm}"),
                    Kind::ApiKey(header) => {
                        format!("ApiKey realm={realm}, header={}", quoted(header))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            // `quoted` leaves visible ASCII and spaces only, which a header value can carry.
            HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
        };
        self.missing = render(false);
        self.invalid = render(true);
    }

    /// For a request that needs credentials and carries none.
    pub fn missing(&self) -> HeaderValue {
        self.missing.clone()
    }

    /// For a request whose credentials are not valid.
    pub fn invalid(&self) -> HeaderValue {
        self.invalid.clone()
    }

    /// For credentials that lack `scopes` (RFC 6750 §3.1).
    pub fn insufficient_scope(&self, scopes: &[&str]) -> Option<HeaderValue> {
        let challenge = format!(
            "Bearer realm={}, error=\"insufficient_scope\", scope={}{}",
            self.realm,
            quoted(&scopes.join(" ")),
            self.resource_metadata
        );
        HeaderValue::try_from(challenge).ok()
    }
}

/// One kind per kind of scheme the document defines (`Bearer` for HTTP bearer, OAuth 2 and
/// OpenID Connect; `Basic`; an API key in a header), in that order whatever the order of the
/// document's map; `Bearer` when it defines none.
fn kinds(schemes: Option<&Value>) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::new();
    for scheme in schemes
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|schemes| schemes.values())
    {
        let text = |key: &str| scheme.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = match (text("type"), text("scheme").to_ascii_lowercase().as_str()) {
            ("http", "basic") => Kind::Basic,
            ("http", "bearer") | ("oauth2" | "openIdConnect", _) => Kind::Bearer,
            ("apiKey", _) if text("in") == "header" => Kind::ApiKey(text("name").to_owned()),
            _ => continue,
        };
        kinds.push(kind);
    }
    kinds.sort();
    kinds.dedup();
    if kinds.is_empty() {
        kinds.push(Kind::Bearer);
    }
    kinds
}

/// `text` as a quoted string (RFC 9110 §5.6.4): `"` and `\` escaped, and characters other
/// than visible ASCII and spaces left out, so that every client can read the header.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.trim().chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            ' ' | '!'..='~' => quoted.push(c),
            _ => {}
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document(title: &str, schemes: Value) -> Value {
        json!({"info": {"title": title}, "components": {"securitySchemes": schemes}})
    }

    #[test]
    fn one_challenge_per_kind_in_the_title_realm() {
        let challenges = Challenges::new(
            &document(
                "Book \"store\"",
                json!({
                    "jwt": {"type": "http", "scheme": "bearer"},
                    "oauth": {"type": "oauth2"},
                    "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                    "cookie": {"type": "apiKey", "in": "cookie", "name": "sid"},
                    "basic": {"type": "http", "scheme": "Basic"},
                }),
            ),
            None,
        );
        assert_eq!(
            challenges.missing(),
            r#"Bearer realm="Book \"store\"", Basic realm="Book \"store\"", ApiKey realm="Book \"store\"", header="X-API-Key""#
        );
        assert_eq!(
            challenges.invalid(),
            r#"Bearer realm="Book \"store\"", error="invalid_token", Basic realm="Book \"store\"", ApiKey realm="Book \"store\"", header="X-API-Key""#
        );
        assert_eq!(
            challenges
                .insufficient_scope(&["books:write", "books:admin"])
                .unwrap(),
            r#"Bearer realm="Book \"store\"", error="insufficient_scope", scope="books:write books:admin""#
        );
    }

    #[test]
    fn bearer_challenges_point_at_the_resource_metadata() {
        let challenges = Challenges::new(
            &document(
                "Books",
                json!({
                    "jwt": {"type": "http", "scheme": "bearer"},
                    "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                }),
            ),
            None,
        )
        .with_resource_metadata("https://api.example/.well-known/oauth-protected-resource");
        assert_eq!(
            challenges.missing(),
            r#"Bearer realm="Books", resource_metadata="https://api.example/.well-known/oauth-protected-resource", ApiKey realm="Books", header="X-API-Key""#
        );
        assert_eq!(
            challenges.invalid(),
            r#"Bearer realm="Books", error="invalid_token", resource_metadata="https://api.example/.well-known/oauth-protected-resource", ApiKey realm="Books", header="X-API-Key""#
        );
        assert_eq!(
            challenges.insufficient_scope(&["books:write"]).unwrap(),
            r#"Bearer realm="Books", error="insufficient_scope", scope="books:write", resource_metadata="https://api.example/.well-known/oauth-protected-resource""#
        );
    }

    #[test]
    fn the_realm_is_chosen_then_the_title_then_a_fallback() {
        let plain = document("Pets", Value::Null);
        assert_eq!(
            Challenges::new(&plain, Some("Staff\\area")).missing(),
            r#"Bearer realm="Staff\\area""#
        );
        assert_eq!(
            Challenges::new(&plain, None).missing(),
            r#"Bearer realm="Pets""#
        );
        // Nothing usable: no title, a title of control and non-ASCII characters only.
        for document in [json!({}), document("\u{7}é\r\n", Value::Null)] {
            assert_eq!(
                Challenges::new(&document, Some("  ")).missing(),
                r#"Bearer realm="halo""#
            );
        }
        assert_eq!(
            Challenges::new(&plain, Some("Café\nAPI")).missing(),
            r#"Bearer realm="CafAPI""#
        );
    }
}

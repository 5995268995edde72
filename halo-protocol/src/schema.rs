//! The per-operation schema served at `OPTIONS /some/path`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Limit, Rate};

mod circuit;
mod input;

pub use self::circuit::{Circuit, CircuitError};
pub use self::input::{InputField, Location};

/// The full HALO schema of one operation (one element of the per-path array).
///
/// Empty and absent fields are omitted when serialised; `false` and `0` are kept.
///
/// ```
/// use halo_protocol::{Call, ToolSchema};
///
/// let schema = ToolSchema::new(Call::new("GET", "/api/weather"));
/// assert_eq!(
///     serde_json::to_string(&schema).unwrap(),
///     r#"{"call":{"method":"GET","url":"/api/weather"}}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchema {
    /// A name for people, in the language the response was negotiated for (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the operation does, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// How to call it.
    pub call: Call,
    /// Which credentials it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    /// Its parameters, one entry each, in the order path, query, header, body.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub input: IndexMap<String, InputField>,
    /// JSON Schema of the success response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// When a model should choose this tool over others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Tags, as in the manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Side effects and how to undo them.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub effects: Option<Effects>,
    /// Rate and idempotency.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub limits: Option<Limits>,
    /// Suggested follow-up operations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<Next>,
    /// Worked examples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// How a client should retry.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub resilience: Option<Resilience>,
    /// Signing metadata.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub trust: Option<Trust>,
    /// Tracing and audit hints.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub observe: Option<Observe>,
    /// `status`, `sunset` and `replace_with`.
    #[serde(flatten)]
    pub lifecycle: Lifecycle,
    /// Present when the operation streams progress events (extension).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub stream: Option<Stream>,
    /// The definitions two or more of its schemas (input entries, `output`) share, written
    /// once (extension): a `#/$defs/Name` reference in an entry or the output resolves in
    /// its own `$defs`, else here. [`standalone`](crate::standalone) makes one schema stand
    /// alone, [`unshare`](Self::unshare) all of them.
    #[serde(rename = "$defs", default, skip_serializing_if = "Map::is_empty")]
    pub defs: Map<String, Value>,
}

impl ToolSchema {
    /// A schema with only its call set.
    #[must_use]
    pub fn new(call: Call) -> Self {
        Self {
            title: None,
            description: String::new(),
            call,
            auth: None,
            input: IndexMap::new(),
            output: None,
            why: None,
            tags: Vec::new(),
            effects: None,
            limits: None,
            next: Vec::new(),
            examples: Vec::new(),
            resilience: None,
            trust: None,
            observe: None,
            lifecycle: Lifecycle::default(),
            stream: None,
            defs: Map::new(),
        }
    }
}

/// Whether an optional part is absent or has nothing in it.
pub(crate) fn is_empty<T: Default + PartialEq>(value: &Option<T>) -> bool {
    value.as_ref().is_none_or(|value| *value == T::default())
}

/// How to call an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Call {
    /// The HTTP method, upper case.
    pub method: String,
    /// The path template or absolute URL.
    pub url: String,
}

impl Call {
    /// A call of `method` on `url`.
    #[must_use]
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            url: url.into(),
        }
    }
}

/// The credentials an operation needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Auth {
    /// The scheme.
    #[serde(rename = "type")]
    pub kind: AuthType,
    /// The header that carries an API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Scopes the caller must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The OAuth 2 token endpoint.
    #[serde(
        default,
        rename = "tokenUrl",
        alias = "token_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub token_url: Option<String>,
}

impl Auth {
    /// Credentials of the given scheme, with no header, scopes or token URL.
    #[must_use]
    pub fn new(kind: AuthType) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }
}

/// An authentication scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AuthType {
    /// No credentials.
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// An API key in a header.
    #[serde(rename = "apikey")]
    ApiKey,
    /// `Authorization: Basic <base64(user:password)>`.
    Basic,
    /// OAuth 2 (bearer tokens obtained from `tokenUrl`).
    #[serde(rename = "oauth")]
    OAuth,
    /// A scheme this version does not know.
    #[serde(other, rename = "unknown")]
    Unknown,
}

/// Side effects.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Effects {
    /// Whether the action can be undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reversible: Option<bool>,
    /// The operation that undoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// Whether a call must be approved before it runs (extension): such a call is answered
    /// `202 Accepted` with the approval to follow, and runs once someone approves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// Whether a call of an operation waits for someone's approval (`effects.approval`,
/// extension).
///
/// ```
/// use halo_protocol::{Approval, Effects};
///
/// let effects: Effects = serde_json::from_str(r#"{"reversible": false, "approval": "required"}"#)
///     .unwrap();
/// assert_eq!(effects.approval, Some(Approval::Required));
/// assert_eq!(Approval::Required.as_str(), "required");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Approval {
    /// Every call is held until an approver approves it (and never runs if denied, or when
    /// nobody decides in time).
    Required,
    /// A value this version does not know (a reader should treat the call as held).
    #[serde(other, rename = "unknown")]
    Unknown,
}

impl Approval {
    /// The value as it is written: `"required"` (or `"unknown"`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Unknown => "unknown",
        }
    }
}

/// Rate and idempotency.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// The declared rate limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Whether repeating the call has the effect of calling once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The header that makes a repeat safe (usually `Idempotency-Key`) (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// More rate limits, each with whose budget it counts (per caller, tenant, tool or
    /// argument value) (extension). A call must fit all of them and [`rate`](Self::rate)
    /// (per caller); one refused by any spends none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<Limit>,
}

/// A suggested next step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Next {
    /// When the suggestion applies (`status=pending`).
    pub when: String,
    /// The suggested operation.
    pub suggest: String,
}

impl Next {
    /// A suggestion of `suggest` when `when` holds.
    #[must_use]
    pub fn new(when: impl Into<String>, suggest: impl Into<String>) -> Self {
        Self {
            when: when.into(),
            suggest: suggest.into(),
        }
    }
}

/// A worked example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Example {
    /// The arguments.
    pub input: Map<String, Value>,
    /// What came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

impl Example {
    /// An example with these arguments and result.
    #[must_use]
    pub fn new(input: Map<String, Value>, output: Option<Value>) -> Self {
        Self { input, output }
    }
}

/// How a client should retry, and what the server does when the operation keeps failing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Resilience {
    /// Whether retrying is worthwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<bool>,
    /// The backoff strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// The expected maximum response time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// An operation to try when this one keeps failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// The circuit breaker the server runs the operation behind (extension): while it is
    /// open, calls are refused with `503` and `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<Circuit>,
}

/// A backoff strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Backoff {
    /// Delays double.
    Exponential,
    /// Delays grow by a constant.
    Linear,
    /// No delay.
    None,
    /// A strategy this version does not know.
    #[serde(other, rename = "unknown")]
    Unknown,
}

/// Signing metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Trust {
    /// Whether the schema is signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed: Option<bool>,
    /// Where the verification keys are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks: Option<String>,
}

/// Tracing and audit hints.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Observe {
    /// The header that carries the trace context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_header: Option<String>,
    /// Whether callers should say why they call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<bool>,
}

/// Lifecycle: `status`, `sunset`, `replace_with`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lifecycle {
    /// `active`, `deprecated` or `sunset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// The ISO date the operation goes away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sunset: Option<String>,
    /// The operation to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_with: Option<String>,
}

/// A lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Status {
    /// In service.
    Active,
    /// Still works; use `replace_with`.
    Deprecated,
    /// Past its sunset date.
    Sunset,
    /// A status this version does not know.
    #[serde(other, rename = "unknown")]
    Unknown,
}

/// Which events a streaming operation emits (extension).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stream {
    /// Event names besides the terminal ones (`tool_progress`).
    #[serde(default)]
    pub events: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_false_and_zero_and_drops_empty_parts() {
        let mut schema = ToolSchema::new(Call::new("POST", "/x"));
        schema.effects = Some(Effects::default());
        schema.limits = Some(Limits {
            idempotent: Some(false),
            ..Limits::default()
        });
        schema.resilience = Some(Resilience {
            timeout_ms: Some(0),
            ..Resilience::default()
        });
        assert_eq!(
            serde_json::to_value(&schema).unwrap(),
            json!({"call": {"method": "POST", "url": "/x"},
                   "limits": {"idempotent": false},
                   "resilience": {"timeout_ms": 0}})
        );
    }

    #[test]
    fn limits_with_dimensions_round_trip_beside_the_plain_rate() {
        let wire = json!({
            "rate": "100/minute",
            "rates": [
                {"rate": "1000/hour", "per": "tenant"},
                {"rate": "20/minute", "per": "tool"},
                {"rate": "3/minute", "per": "argument", "argument": "sku"}
            ]
        });
        let limits: Limits = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(limits.rate.unwrap().to_string(), "100/minute");
        assert_eq!(
            limits.rates,
            [
                "1000/hour per tenant".parse().unwrap(),
                "20/minute per tool".parse().unwrap(),
                "3/minute per sku".parse().unwrap(),
            ]
        );
        assert_eq!(serde_json::to_value(&limits).unwrap(), wire);
        // A reader of `rate` alone (HALO 0.3.1) sees what it always did.
        assert_eq!(
            serde_json::to_value(Limits::default()).unwrap(),
            json!({}),
            "no `rates` when there are none"
        );
    }

    #[test]
    fn reads_reference_shapes() {
        let schema: ToolSchema = serde_json::from_value(json!({
            "description": "d", "call": {"method": "POST", "url": "/items"},
            "auth": {"type": "oauth", "scopes": [], "token_url": "/token"},
            "input": {"name": {"type": "string", "required": true}},
            "why": "W", "tags": ["x"], "limits": {"idempotent": false},
            "status": "deprecated", "unknown_field": 1
        }))
        .unwrap();
        assert_eq!(schema.auth.unwrap().token_url.as_deref(), Some("/token"));
        assert!(schema.input["name"].required);
        assert_eq!(schema.lifecycle.status, Some(Status::Deprecated));
    }

    #[test]
    fn object_schemas_with_their_own_required_list_are_nested() {
        let schema = json!({"type": "object", "description": "d", "required": ["a"], "properties": {"a": {"type": "string"}}});
        let field = InputField::new(schema.clone())
            .required(true)
            .located(Location::Body);
        let written = serde_json::to_value(&field).unwrap();
        assert_eq!(
            written,
            json!({"description": "d", "allOf": [schema], "required": true, "in": "body"})
        );
        let back: InputField = serde_json::from_value(written).unwrap();
        assert!(back.required);
        assert_eq!(back.location, Some(Location::Body));

        // A foreign server that writes the list flat is still readable, and written back safely.
        let flat: InputField = serde_json::from_value(schema.clone()).unwrap();
        assert!(!flat.required);
        assert_eq!(serde_json::to_value(&flat).unwrap()["allOf"][0], schema);
        let odd: InputField =
            serde_json::from_value(json!({"type": "string", "in": "cookie"})).unwrap();
        assert_eq!(odd.location, None);
    }

    #[test]
    fn reading_undoes_the_nesting() {
        let read = |value: Value| serde_json::from_value::<InputField>(value).unwrap().schema;
        // A description differing from the inner one keeps the nesting.
        let kept = read(
            json!({"description": "outer", "allOf": [{"type": "object", "description": "inner"}]}),
        );
        assert_eq!(kept["description"], "outer");
        assert!(kept.contains_key("allOf"));
        // An inner schema without a description takes the outer one.
        let merged =
            read(json!({"description": "outer", "allOf": [{"type": "object", "required": ["a"]}]}));
        assert_eq!(
            Value::Object(merged),
            json!({"type": "object", "required": ["a"], "description": "outer"})
        );
        // Other keywords beside allOf: left alone.
        let other = json!({"allOf": [{"type": "string"}], "minLength": 1});
        assert_eq!(Value::Object(read(other.clone())), other);
    }

    #[test]
    fn unknown_enum_values_are_kept_readable() {
        let auth: Auth = serde_json::from_value(json!({"type": "mtls"})).unwrap();
        assert_eq!(auth.kind, AuthType::Unknown);
    }
}

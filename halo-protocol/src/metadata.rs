//! The `x-halo-*` OpenAPI operation extensions that carry HALO's LLM-native fields.
//!
//! `#[halo(...)]` writes them, and so can anyone by hand with utoipa's `extensions(...)`; the
//! server reads them back with [`Metadata::from_extensions`]. Every key is checked: a misspelt
//! `x-halo-*` key or field is an error, never silently ignored.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::date::check_date;
use crate::schema::{Approval, Backoff, Status};
use crate::{
    Effects, Example, Lifecycle, Limits, Next, Observe, Resilience, Stream, ToolKind, Trust,
};

/// HALO's LLM-native metadata of one operation, as carried by `x-halo-*` extensions.
///
/// | extension | field |
/// |---|---|
/// | `x-halo-why` | [`why`](Self::why) (a string) |
/// | `x-halo-effects` | [`effects`](Self::effects) |
/// | `x-halo-limits` | [`limits`](Self::limits) |
/// | `x-halo-next` | [`next`](Self::next) (an array) |
/// | `x-halo-examples` | [`examples`](Self::examples) (an array) |
/// | `x-halo-resilience` | [`resilience`](Self::resilience) |
/// | `x-halo-trust` | [`trust`](Self::trust) |
/// | `x-halo-observe` | [`observe`](Self::observe) |
/// | `x-halo-lifecycle` | [`lifecycle`](Self::lifecycle) (`status`, `sunset`, `replace_with`) |
/// | `x-halo-stream` | [`stream`](Self::stream) |
/// | `x-halo-i18n` | [`locales`](Self::locales) (language tag → [`LocalizedText`]) |
/// | `x-halo-kind` | [`kind`](Self::kind) (`"tool"` or `"agent"`) |
///
/// ```
/// use halo_protocol::Metadata;
/// use serde_json::json;
///
/// let why = json!("Use after an order is confirmed");
/// let limits = json!({"rate": "5/min"});
/// let meta = Metadata::from_extensions([("x-halo-why", &why), ("x-halo-limits", &limits)]).unwrap();
/// assert_eq!(meta.limits.unwrap().rate.unwrap().to_string(), "5/minute");
///
/// let typo = json!(true);
/// let err = Metadata::from_extensions([("x-halo-reversable", &typo)]).unwrap_err();
/// assert!(err.to_string().contains("x-halo-reversable"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// When a model should choose this tool over others.
    pub why: Option<String>,
    /// Side effects.
    pub effects: Option<Effects>,
    /// Rate and idempotency.
    pub limits: Option<Limits>,
    /// Suggested next steps.
    pub next: Vec<Next>,
    /// Worked examples.
    pub examples: Vec<Example>,
    /// Retry advice.
    pub resilience: Option<Resilience>,
    /// Signing metadata.
    pub trust: Option<Trust>,
    /// Tracing hints.
    pub observe: Option<Observe>,
    /// Status, sunset date and replacement.
    pub lifecycle: Option<Lifecycle>,
    /// Streaming events.
    pub stream: Option<Stream>,
    /// Localised name, description and why, by language tag (`zh`, `en-GB`).
    pub locales: BTreeMap<String, LocalizedText>,
    /// What kind of operation it is, when not a plain tool (a hosted agent).
    pub kind: Option<ToolKind>,
}

/// Localised text of one operation in one language.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LocalizedText {
    /// The tool name shown to people in that language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The routing hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// An `x-halo-*` extension that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The key is not one HALO defines.
    #[error("unknown extension `{key}`; HALO defines {}, {EXCLUDE_EXTENSION} and {CALLERS_EXTENSION}", KEYS.join(", "))]
    UnknownKey {
        /// The key as written.
        key: String,
    },
    /// The value does not have the shape the key requires.
    #[error("extension `{key}`: {message}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The extension that leaves an operation out of HALO altogether when it is `true`: no tool,
/// no discovery, no checks; the application still serves the route as it always did. On a
/// path item it leaves out every operation of the path.
pub const EXCLUDE_EXTENSION: &str = "x-halo-exclude";

/// The extension that opens an operation to some callers only, by their id:
/// `{"allow": ["finance-*"], "deny": ["intern"]}`, each a list of case-insensitive globs.
/// Who may call is the server's business, not the model's: it is enforced (a caller left out
/// does not see the tool and is refused a call) and never served in a tool's schema.
pub const CALLERS_EXTENSION: &str = "x-halo-callers";

/// The extension keys HALO defines, in the order they are written.
pub(crate) const KEYS: [&str; 12] = [
    "x-halo-why",
    "x-halo-effects",
    "x-halo-limits",
    "x-halo-next",
    "x-halo-examples",
    "x-halo-resilience",
    "x-halo-trust",
    "x-halo-observe",
    "x-halo-lifecycle",
    "x-halo-stream",
    "x-halo-i18n",
    "x-halo-kind",
];

impl Metadata {
    /// Reads every `x-halo-*` entry of an extension map; other keys are ignored.
    ///
    /// # Errors
    /// An unknown `x-halo-*` key, an unknown field inside one, a value of the wrong type, an
    /// invalid rate, or a status, backoff or date this version does not accept.
    pub fn from_extensions<'a, I>(extensions: I) -> Result<Self, MetadataError>
    where
        I: IntoIterator<Item = (&'a str, &'a Value)>,
    {
        let mut meta = Self::default();
        for (key, value) in extensions {
            if !key.starts_with("x-halo-") {
                continue;
            }
            match key {
                "x-halo-why" => meta.why = Some(read(key, value)?),
                "x-halo-effects" => meta.effects = Some(read(key, value)?),
                "x-halo-limits" => meta.limits = Some(read(key, value)?),
                "x-halo-next" => meta.next = read(key, value)?,
                "x-halo-examples" => meta.examples = read(key, value)?,
                "x-halo-resilience" => meta.resilience = Some(read(key, value)?),
                "x-halo-trust" => meta.trust = Some(read(key, value)?),
                "x-halo-observe" => meta.observe = Some(read(key, value)?),
                "x-halo-lifecycle" => meta.lifecycle = Some(read(key, value)?),
                "x-halo-stream" => meta.stream = Some(read(key, value)?),
                "x-halo-i18n" => meta.locales = read(key, value)?,
                "x-halo-kind" => meta.kind = Some(read(key, value)?),
                EXCLUDE_EXTENSION => {
                    let _: bool = read(key, value)?;
                }
                // Read where access is decided, which says what is wrong with it.
                CALLERS_EXTENSION => {}
                _ => {
                    return Err(MetadataError::UnknownKey {
                        key: key.to_owned(),
                    });
                }
            }
        }
        meta.check()?;
        Ok(meta)
    }

    /// Writes the metadata as `x-halo-*` extension entries (only the parts that are set).
    #[must_use]
    pub fn to_extensions(&self) -> Vec<(String, Value)> {
        let parts = [
            to_value(self.why.as_ref()),
            to_value(self.effects.as_ref()),
            to_value(self.limits.as_ref()),
            to_value(Some(&self.next).filter(|v| !v.is_empty())),
            to_value(Some(&self.examples).filter(|v| !v.is_empty())),
            to_value(self.resilience.as_ref()),
            to_value(self.trust.as_ref()),
            to_value(self.observe.as_ref()),
            to_value(self.lifecycle.as_ref()),
            to_value(self.stream.as_ref()),
            to_value(Some(&self.locales).filter(|v| !v.is_empty())),
            to_value(self.kind.as_ref()),
        ];
        KEYS.iter()
            .zip(parts)
            .filter_map(|(key, value)| Some(((*key).to_owned(), value?)))
            .collect()
    }

    /// Overlays `other` on `self`: every part `other` sets replaces the same part here.
    pub fn merge(&mut self, other: Self) {
        fn take<T>(mine: &mut Option<T>, theirs: Option<T>) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
        take(&mut self.why, other.why);
        take(&mut self.effects, other.effects);
        take(&mut self.limits, other.limits);
        take(&mut self.resilience, other.resilience);
        take(&mut self.trust, other.trust);
        take(&mut self.observe, other.observe);
        take(&mut self.lifecycle, other.lifecycle);
        take(&mut self.stream, other.stream);
        take(&mut self.kind, other.kind);
        if !other.next.is_empty() {
            self.next = other.next;
        }
        if !other.examples.is_empty() {
            self.examples = other.examples;
        }
        self.locales.extend(other.locales);
    }

    /// Rejects values that parse but that this version does not know.
    fn check(&self) -> Result<(), MetadataError> {
        let invalid = |key: &str, message: &str| MetadataError::Invalid {
            key: key.to_owned(),
            message: message.to_owned(),
        };
        if let Some(Resilience {
            backoff: Some(Backoff::Unknown),
            ..
        }) = &self.resilience
        {
            return Err(invalid(
                "x-halo-resilience",
                "backoff must be exponential, linear or none",
            ));
        }
        if let Some(Effects {
            approval: Some(Approval::Unknown),
            ..
        }) = &self.effects
        {
            return Err(invalid("x-halo-effects", "approval must be required"));
        }
        if let Some(lifecycle) = &self.lifecycle {
            if lifecycle.status == Some(Status::Unknown) {
                return Err(invalid(
                    "x-halo-lifecycle",
                    "status must be active, deprecated or sunset",
                ));
            }
            if let Some(Err(reason)) = lifecycle.sunset.as_deref().map(check_date) {
                return Err(invalid("x-halo-lifecycle", &format!("sunset: {reason}")));
            }
        }
        Ok(())
    }
}

fn to_value<T: Serialize>(part: Option<&T>) -> Option<Value> {
    part.and_then(|part| serde_json::to_value(part).ok())
}

/// Deserialises one extension, refusing fields the type does not have.
fn read<T: DeserializeOwned + Serialize>(key: &str, value: &Value) -> Result<T, MetadataError> {
    let invalid = |message: String| MetadataError::Invalid {
        key: key.to_owned(),
        message,
    };
    let parsed: T = serde_json::from_value(value.clone()).map_err(|e| invalid(e.to_string()))?;
    let written = serde_json::to_value(&parsed).map_err(|e| invalid(e.to_string()))?;
    match unknown_field(value, &written) {
        Some(field) => Err(invalid(format!("unknown field `{field}`"))),
        None => Ok(parsed),
    }
}

/// The first non-null field of `given` that did not survive a round trip into `kept`.
fn unknown_field(given: &Value, kept: &Value) -> Option<String> {
    match (given, kept) {
        (Value::Object(given), Value::Object(kept)) => {
            given.iter().find_map(|(name, value)| match kept.get(name) {
                None if !value.is_null() => Some(name.clone()),
                Some(inner) if !is_free_form(name) => unknown_field(value, inner),
                _ => None,
            })
        }
        (Value::Array(given), Value::Array(kept)) => given
            .iter()
            .zip(kept)
            .find_map(|(given, kept)| unknown_field(given, kept)),
        _ => None,
    }
}

/// Fields whose contents are arbitrary JSON (example payloads, locale maps are checked by
/// their own type).
fn is_free_form(name: &str) -> bool {
    matches!(name, "input" | "output")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(pairs: &[(&str, Value)]) -> Result<Metadata, MetadataError> {
        Metadata::from_extensions(pairs.iter().map(|(k, v)| (*k, v)))
    }

    #[test]
    fn round_trips_every_key() {
        let pairs = [
            ("x-halo-why", json!("w")),
            (
                "x-halo-effects",
                json!({"reversible": true, "undo": "/u", "approval": "required"}),
            ),
            (
                "x-halo-limits",
                json!({"rate": "5/minute", "idempotent": false, "idempotency_key": "Idempotency-Key"}),
            ),
            ("x-halo-next", json!([{"when": "201", "suggest": "/n"}])),
            (
                "x-halo-examples",
                json!([{"input": {"a": 1, "zz": {"free": true}}, "output": [1]}]),
            ),
            (
                "x-halo-resilience",
                json!({"retry": true, "backoff": "exponential", "timeout_ms": 0, "fallback": "/f",
                       "circuit": {"failures": 3, "cool_down_ms": 10000, "successes": 1}}),
            ),
            (
                "x-halo-trust",
                json!({"signed": false, "jwks": "https://k"}),
            ),
            (
                "x-halo-observe",
                json!({"trace_header": "traceparent", "explain": true}),
            ),
            (
                "x-halo-lifecycle",
                json!({"status": "deprecated", "sunset": "2027-01-31", "replace_with": "/r"}),
            ),
            ("x-halo-stream", json!({"events": ["tool_progress"]})),
            ("x-halo-i18n", json!({"zh": {"name": "n", "why": "w"}})),
            ("x-halo-kind", json!("agent")),
        ];
        let meta = parse(&pairs).unwrap();
        let written = meta.to_extensions();
        let expected: Vec<(String, Value)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        assert_eq!(written, expected);
    }

    #[test]
    fn ignores_foreign_extensions() {
        let meta = parse(&[("x-team", json!("a")), ("x-halo-why", json!("w"))]).unwrap();
        assert_eq!(meta.why.as_deref(), Some("w"));
    }

    #[test]
    fn rejects_typos_and_bad_values() {
        for (key, value, needle) in [
            ("x-halo-reversible", json!(true), "unknown extension"),
            ("x-halo-effects", json!({"reversable": true}), "reversable"),
            (
                "x-halo-effects",
                json!({"reversible": "yes"}),
                "invalid type",
            ),
            (
                "x-halo-limits",
                json!({"rate": "5/fortnight"}),
                "invalid rate",
            ),
            (
                "x-halo-next",
                json!([{"when": "x", "suggest": "y", "extra": 1}]),
                "extra",
            ),
            ("x-halo-lifecycle", json!({"status": "retired"}), "status"),
            ("x-halo-effects", json!({"approval": "maybe"}), "approval"),
            ("x-halo-lifecycle", json!({"sunset": "soon"}), "YYYY-MM-DD"),
            (
                "x-halo-lifecycle",
                json!({"sunset": "2027-02-30"}),
                "day 30",
            ),
            (
                "x-halo-lifecycle",
                json!({"sunset": "2027-13-01"}),
                "month 13",
            ),
            ("x-halo-resilience", json!({"backoff": "random"}), "backoff"),
            (
                "x-halo-resilience",
                json!({"circuit": {"failures": 0}}),
                "failures must be at least 1",
            ),
            (
                "x-halo-resilience",
                json!({"circuit": {"cool_down_ms": 0}}),
                "cool-down",
            ),
            (
                "x-halo-resilience",
                json!({"circuit": {"successes": 0}}),
                "successes",
            ),
            (
                "x-halo-resilience",
                json!({"circuit": {"failures": 2, "cooldown": 1}}),
                "cooldown",
            ),
            ("x-halo-i18n", json!({"zh": {"title": "x"}}), "title"),
            ("x-halo-examples", json!([{"output": {}}]), "input"),
        ] {
            let err = parse(&[(key, value)]).unwrap_err().to_string();
            assert!(err.contains(needle), "{key}: {err}");
        }
    }

    #[test]
    fn merge_overlays_set_parts() {
        let mut base = parse(&[
            ("x-halo-why", json!("a")),
            ("x-halo-effects", json!({"reversible": true})),
        ])
        .unwrap();
        base.merge(parse(&[("x-halo-why", json!("b"))]).unwrap());
        assert_eq!(base.why.as_deref(), Some("b"));
        assert!(base.effects.is_some());
    }
}

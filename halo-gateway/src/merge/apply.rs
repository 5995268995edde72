//! What the policies set on a tool, written into its operation: `x-halo-*` extensions the
//! layer enforces and the model reads, the security requirement that scopes who sees it, and
//! the `Idempotency-Key` header parameter when a key is required.

use serde_json::{Map, Value, json};

use crate::policy::{Effective, Idempotency};

/// The security scheme the gateway's callers authenticate with, in the merged document.
pub(crate) const SCHEME: &str = "gateway";

/// The header an idempotency key travels in, unless the upstream names another.
const KEY_HEADER: &str = "Idempotency-Key";

/// Writes `effective` into `operation` (an operation object of the merged document).
/// `authenticated`: the gateway has callers to tell apart, and every tool requires one.
pub(crate) fn apply(
    effective: &Effective,
    operation: &mut Map<String, Value>,
    authenticated: bool,
) {
    // Security: the upstream's is the gateway's business with the upstream, not the caller's.
    operation.remove("security");
    if authenticated {
        let scopes = effective
            .scopes
            .as_ref()
            .map(|s| s.value.clone())
            .unwrap_or_default();
        operation.insert("security".to_owned(), json!([{ SCHEME: scopes }]));
    }

    if let Some(callers) = &effective.callers {
        let mut list = Map::new();
        if let Some(allow) = &callers.value.allow {
            list.insert("allow".to_owned(), json!(allow));
        }
        if !callers.value.deny.is_empty() {
            list.insert("deny".to_owned(), json!(callers.value.deny));
        }
        operation.insert("x-halo-callers".to_owned(), Value::Object(list));
    }

    let limits = extension(operation, "x-halo-limits");
    if let Some(rate) = &effective.rate {
        limits.insert("rate".to_owned(), Value::String(rate.value.to_string()));
    }
    if let Some(rates) = &effective.rates {
        limits.insert("rates".to_owned(), json!(rates.value));
    }
    let key_header = match effective.idempotency.as_ref().map(|s| s.value) {
        None => None,
        Some(Idempotency::Off) => {
            limits.remove("idempotency_key");
            None
        }
        Some(setting) => {
            let header = limits
                .get("idempotency_key")
                .and_then(Value::as_str)
                .unwrap_or(KEY_HEADER)
                .to_owned();
            limits.insert("idempotency_key".to_owned(), Value::String(header.clone()));
            (setting == Idempotency::Required).then_some(header)
        }
    };
    drop_if_empty(operation, "x-halo-limits");
    if let Some(header) = key_header {
        require_header(operation, &header);
    }

    let resilience = extension(operation, "x-halo-resilience");
    if let Some(timeout) = &effective.timeout {
        let ms = u64::try_from(timeout.value.as_millis()).unwrap_or(u64::MAX);
        resilience.insert("timeout_ms".to_owned(), json!(ms));
    }
    if let Some(circuit) = &effective.circuit {
        resilience.insert("circuit".to_owned(), json!(circuit.value));
    }
    drop_if_empty(operation, "x-halo-resilience");

    let effects = extension(operation, "x-halo-effects");
    if let Some(reversible) = &effective.reversible {
        effects.insert("reversible".to_owned(), Value::Bool(reversible.value));
    }
    match effective.approval.as_ref().map(|s| s.value) {
        Some(true) => {
            effects.insert("approval".to_owned(), Value::String("required".to_owned()));
        }
        Some(false) => {
            effects.remove("approval");
        }
        None => {}
    }
    drop_if_empty(operation, "x-halo-effects");
}

/// The extension object `key` of `operation`, made one when it is missing or not an object.
fn extension<'a>(operation: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = operation
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made an object above")
}

fn drop_if_empty(operation: &mut Map<String, Value>, key: &str) {
    if operation
        .get(key)
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        operation.remove(key);
    }
}

/// Declares `header` a required header parameter of `operation` (making the upstream's own
/// declaration of it required, when it has one).
fn require_header(operation: &mut Map<String, Value>, header: &str) {
    let parameters = operation
        .entry("parameters".to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(parameters) = parameters else {
        return;
    };
    let existing = parameters.iter_mut().find(|p| {
        p.get("in").and_then(Value::as_str) == Some("header")
            && p.get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| name.eq_ignore_ascii_case(header))
    });
    match existing {
        Some(parameter) => parameter["required"] = Value::Bool(true),
        None => parameters.push(json!({
            "name": header,
            "in": "header",
            "required": true,
            "description": "A unique key for this call (a UUID): a repeat with the same key is answered once, never run twice.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255}
        })),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::policy::{Origin, Setting};

    fn set<T>(value: T) -> Option<Setting<T>> {
        Some(Setting {
            value,
            origin: Origin {
                rule: 0,
                risk: None,
            },
        })
    }

    #[test]
    fn declarations_are_written_over_the_upstreams_own() {
        let effective = Effective {
            rate: set("10/minute".parse().unwrap()),
            timeout: set(Duration::from_secs(5)),
            circuit: set("5/30s/2".parse().unwrap()),
            approval: set(true),
            idempotency: set(Idempotency::Required),
            reversible: set(false),
            scopes: set(vec!["admin".to_owned()]),
            ..Effective::default()
        };
        let mut operation = json!({
            "security": [{"oauth": ["repo"]}],
            "x-halo-limits": {"idempotent": true},
            "x-halo-why": "keep me",
            "parameters": [{"name": "q", "in": "query"}]
        });
        apply(&effective, operation.as_object_mut().unwrap(), true);
        assert_eq!(operation["security"], json!([{"gateway": ["admin"]}]));
        assert_eq!(
            operation["x-halo-limits"],
            json!({"idempotent": true, "rate": "10/minute", "idempotency_key": "Idempotency-Key"})
        );
        assert_eq!(
            operation["x-halo-resilience"],
            json!({"timeout_ms": 5000, "circuit": {"failures": 5, "cool_down_ms": 30000, "successes": 2}})
        );
        assert_eq!(
            operation["x-halo-effects"],
            json!({"reversible": false, "approval": "required"})
        );
        assert_eq!(operation["x-halo-why"], "keep me");
        assert_eq!(operation["parameters"][1]["name"], "Idempotency-Key");
        assert_eq!(operation["parameters"][1]["required"], true);

        let mut open = json!({"security": [{"oauth": []}]});
        apply(&Effective::default(), open.as_object_mut().unwrap(), false);
        assert_eq!(open, json!({}));
    }

    #[test]
    fn an_upstreams_own_key_header_is_made_required() {
        let effective = Effective {
            idempotency: set(Idempotency::Required),
            ..Effective::default()
        };
        let mut operation = json!({"parameters": [{"name": "idempotency-key", "in": "header"}]});
        apply(&effective, operation.as_object_mut().unwrap(), false);
        assert_eq!(
            operation["parameters"],
            json!([{"name": "idempotency-key", "in": "header", "required": true}])
        );
    }
}

//! The input entries never written to an audit trail or shown to approvers.

use halo_protocol::InputField;
use indexmap::IndexMap;
use serde_json::Value;

/// The input entries whose value must not be audited: those whose schema says
/// `"writeOnly": true` or `"format": "password"`.
pub(crate) fn sensitive(input: &IndexMap<String, InputField>) -> Vec<String> {
    input
        .iter()
        .filter(|(_, field)| {
            field.schema.get("writeOnly") == Some(&Value::Bool(true))
                || field.schema.get("format").and_then(Value::as_str) == Some("password")
        })
        .map(|(name, _)| name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sensitive_entries_are_write_only_or_passwords() {
        let field = InputField::new;
        let input: IndexMap<String, InputField> = [
            ("user", field(json!({"type": "string"}))),
            (
                "password",
                field(json!({"type": "string", "format": "password"})),
            ),
            ("token", field(json!({"type": "string", "writeOnly": true}))),
            (
                "shown",
                field(json!({"type": "string", "writeOnly": false})),
            ),
        ]
        .into_iter()
        .map(|(name, field)| (name.to_owned(), field))
        .collect();
        assert_eq!(sensitive(&input), ["password", "token"]);
    }
}

//! The configuration file's text, read as JSON or YAML into one JSON value.
//!
//! YAML is read with serde-saphyr: a YAML 1.2 reader that forbids `unsafe`, is fuzzed, does
//! not panic on malformed input and enforces budgets (nesting, nodes, aliases and the
//! ratio of aliases to anchors, so an alias bomb is refused rather than expanded). serde_yaml
//! is archived and serde_yml carries an unsoundness advisory; see the crate docs.

use serde_json::Value;
use serde_saphyr::{Budget, Options};

/// The largest configuration file read: a gateway's configuration is a page, not a
/// document (the OpenAPI documents it names are read on their own).
pub(crate) const MAX_BYTES: usize = 1024 * 1024;

/// The value `text` holds: JSON when it starts (after blanks) with `{`, YAML otherwise.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "the file is {} bytes; a configuration may be at most {MAX_BYTES}",
            text.len()
        ));
    }
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"));
    }
    let mut budget = Budget::default();
    budget.max_depth = 32;
    budget.max_nodes = 50_000;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    let mut options = Options::default();
    options.budget = Some(budget);
    // YAML 1.2: only `true` and `false` are booleans (`no` stays the string it reads as).
    options.strict_booleans = true;
    let value: Value = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| format!("not valid YAML: {e}"))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_and_yaml_read_alike() {
        let yaml = "listen: 127.0.0.1:8080\nupstreams:\n  gh: { openapi: gh.json }\n";
        let json = r#"{"listen": "127.0.0.1:8080", "upstreams": {"gh": {"openapi": "gh.json"}}}"#;
        assert_eq!(parse(yaml).unwrap(), parse(json).unwrap());
        // YAML 1.2: a date and `no` stay what they are written as.
        assert_eq!(
            parse("since: 2024-01-02\nflag: no\n").unwrap(),
            json!({"since": "2024-01-02", "flag": "no"})
        );
    }

    #[test]
    fn hostile_text_is_refused_not_expanded() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..12 {
            let previous = (b'a' + level - 1) as char;
            let name = (b'a' + level) as char;
            bomb.push_str(&format!(
                "{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
            ));
        }
        assert!(parse(&bomb).is_err());
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(&deep).is_err());
        let deep_json = format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(&deep_json).is_err());
        assert!(parse("a: [1, 2").unwrap_err().contains("YAML"));
        assert!(parse("a: 1\na: 2\n").is_err(), "duplicate keys");
        assert!(
            parse(&"#".repeat(MAX_BYTES + 1))
                .unwrap_err()
                .contains("at most")
        );
    }
}

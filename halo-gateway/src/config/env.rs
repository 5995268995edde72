//! `${NAME}` references in the configuration, replaced with the environment's values.
//!
//! They are expanded in the parsed document's strings (keys and values), never in its text:
//! a value that contains YAML or JSON syntax stays one string, and cannot add keys. The
//! forms are `${NAME}`, `${NAME:-default}` (the default when `NAME` is unset or empty), and
//! `$${` for a literal `${`. An unset variable without a default is an error that names the
//! variable and the key it is in, never a value.

use serde_json::{Map, Value};

/// Expands every reference in `value`, reading variables with `lookup`: the variables used,
/// with their values, so that messages can be kept from showing them ([`Used::scrub`]).
pub(crate) fn expand(
    value: &mut Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Used, String> {
    let used = std::cell::RefCell::new(Used::default());
    let recording = |name: &str| {
        let value = lookup(name);
        if let Some(value) = &value {
            used.borrow_mut().0.push((name.to_owned(), value.clone()));
        }
        value
    };
    walk(value, &recording, &mut Vec::new())?;
    Ok(used.into_inner())
}

/// The variables an expansion used, with their values.
#[derive(Debug, Default)]
pub(crate) struct Used(Vec<(String, String)>);

impl Used {
    /// `message` with every value of a variable (of 4 characters or more) written as the
    /// reference it came from: what is read from the environment is often a secret, and a
    /// message that quotes a bad value must not show it.
    pub(crate) fn scrub(&self, message: String) -> String {
        let mut values: Vec<&(String, String)> = self
            .0
            .iter()
            .filter(|(_, value)| value.len() >= 4)
            .collect();
        // Longest first, so that a value inside another is not replaced first.
        values.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        values.into_iter().fold(message, |message, (name, value)| {
            message.replace(value.as_str(), &format!("${{{name}}}"))
        })
    }
}

fn walk(
    value: &mut Value,
    lookup: &dyn Fn(&str) -> Option<String>,
    at: &mut Vec<String>,
) -> Result<(), String> {
    match value {
        Value::String(text) => {
            if let Some(expanded) = expand_text(text, lookup).map_err(|e| here(at, &e))? {
                *text = expanded;
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                at.push(index.to_string());
                walk(item, lookup, at)?;
                at.pop();
            }
        }
        Value::Object(map) => {
            let entries = std::mem::take(map);
            let mut expanded = Map::with_capacity(entries.len());
            for (key, mut item) in entries {
                let key = match expand_text(&key, lookup).map_err(|e| here(at, &e))? {
                    Some(new) => new,
                    None => key,
                };
                at.push(key.clone());
                walk(&mut item, lookup, at)?;
                at.pop();
                if expanded.insert(key, item).is_some() {
                    return Err(here(at, "two keys are the same once expanded"));
                }
            }
            *map = expanded;
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

fn here(at: &[String], message: &str) -> String {
    if at.is_empty() {
        message.to_owned()
    } else {
        format!("{}: {message}", at.join("."))
    }
}

/// `text` with its references replaced, or `None` when it has none.
fn expand_text(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    if !text.contains("${") {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            // `$${`: a literal `${`.
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let inner = &rest[at + 2..];
        let end = inner
            .find('}')
            .ok_or_else(|| "a `${` without its closing `}`".to_owned())?;
        let reference = &inner[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "`${{{name}}}` is not a variable name (letters, digits and `_`)"
            ));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the environment variable `{name}` is not set")),
        }
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "TRICKY" => Some("a: {b: c}".into()),
            _ => None,
        }
    }

    #[test]
    fn keys_and_values_are_expanded() {
        let mut value = json!({
            "auth": {"tokens": {"${TOKEN}": {"caller": "ops"}}},
            "h": ["Bearer ${TOKEN}", "${MISSING:-fallback}", "${EMPTY:-d}", "$${TOKEN}", "${TRICKY}"],
        });
        expand(&mut value, &lookup).unwrap();
        assert_eq!(
            value,
            json!({
                "auth": {"tokens": {"s3cret": {"caller": "ops"}}},
                "h": ["Bearer s3cret", "fallback", "d", "${TOKEN}", "a: {b: c}"],
            })
        );
    }

    #[test]
    fn errors_name_the_variable_and_the_key_never_a_value() {
        let mut value = json!({"upstreams": {"gh": {"headers": {"X-Key": "${GH_KEY}"}}}});
        let error = expand(&mut value, &lookup).unwrap_err();
        let used = expand(&mut json!(["${TOKEN}", "${EMPTY:-x}"]), &lookup).unwrap();
        assert_eq!(
            used.scrub("`s3cret` is not an address".into()),
            "`${TOKEN}` is not an address"
        );
        assert_eq!(
            error,
            "upstreams.gh.headers.X-Key: the environment variable `GH_KEY` is not set"
        );
        for (bad, says) in [
            ("${TOKEN", "closing"),
            ("${}", "not a variable name"),
            ("${A-B}", "not a variable name"),
        ] {
            let error = expand(&mut json!(bad), &lookup).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
            assert!(!error.contains("s3cret"));
        }
        let mut twice = json!({"${TOKEN}": 1, "s3cret": 2});
        assert!(expand(&mut twice, &lookup).unwrap_err().contains("same"));
    }
}

//! Local references (`$ref`) of one upstream's document, rewritten for the merged document:
//! its components renamed where another upstream has one of the same name, and its paths
//! under the upstream's prefix.

use std::collections::{BTreeMap, HashMap, HashSet};

use halo_protocol::{escape_token, unescape_token};
use serde_json::Value;

/// The sections of `components` the merged document keeps (security schemes are the
/// gateway's own).
pub(super) const SECTIONS: [&str; 9] = [
    "schemas",
    "responses",
    "parameters",
    "examples",
    "requestBodies",
    "headers",
    "links",
    "callbacks",
    "pathItems",
];

/// The new names of each upstream's components, by section: a component whose name another
/// upstream also uses becomes `<upstream>.<name>`; the others keep theirs.
#[derive(Debug, Default)]
pub(super) struct Renames {
    /// By upstream, then section, then old name.
    renamed: Vec<HashMap<&'static str, HashMap<String, String>>>,
}

impl Renames {
    pub(super) fn find(upstreams: &[(&str, &Value)]) -> Self {
        let mut owners: BTreeMap<(&'static str, &str), HashSet<usize>> = BTreeMap::new();
        for (index, (_, document)) in upstreams.iter().enumerate() {
            for section in SECTIONS {
                let names = document
                    .pointer(&format!("/components/{section}"))
                    .and_then(Value::as_object);
                for name in names.into_iter().flat_map(|m| m.keys()) {
                    owners.entry((section, name)).or_default().insert(index);
                }
            }
        }
        let mut renamed: Vec<HashMap<&'static str, HashMap<String, String>>> =
            (0..upstreams.len()).map(|_| HashMap::new()).collect();
        for ((section, name), owners) in owners {
            if owners.len() < 2 {
                continue;
            }
            for index in owners {
                let upstream = upstreams[index].0;
                renamed[index]
                    .entry(section)
                    .or_default()
                    .insert(name.to_owned(), format!("{upstream}.{name}"));
            }
        }
        Self { renamed }
    }

    /// The name the component `name` of `section` of upstream `index` has in the merged
    /// document.
    pub(super) fn name<'a>(&'a self, index: usize, section: &str, name: &'a str) -> &'a str {
        self.renamed
            .get(index)
            .and_then(|sections| sections.get(section))
            .and_then(|names| names.get(name))
            .map_or(name, String::as_str)
    }

    /// Rewrites every local `$ref` in `value` (upstream `index`, paths under `prefix`).
    pub(super) fn rewrite(&self, index: usize, prefix: &str, value: &mut Value) {
        crate::references::rewrite(value, &|reference| self.reference(index, prefix, reference));
    }

    fn reference(&self, index: usize, prefix: &str, reference: &str) -> Option<String> {
        let pointer = reference.strip_prefix("#/")?;
        let mut tokens = pointer.splitn(3, '/');
        match (tokens.next()?, tokens.next(), tokens.next()) {
            ("components", Some(section), Some(rest)) => {
                let (name, tail) = match rest.split_once('/') {
                    Some((name, tail)) => (name, Some(tail)),
                    None => (rest, None),
                };
                let unescaped = unescape_token(name);
                let new = self.name(index, section, &unescaped);
                if new == unescaped.as_ref() {
                    return None;
                }
                let mut out = format!("#/components/{section}/{}", escape_token(new));
                if let Some(tail) = tail {
                    out.push('/');
                    out.push_str(tail);
                }
                Some(out)
            }
            ("paths", Some(path), rest) => {
                let unescaped = unescape_token(path);
                let mut out = format!(
                    "#/paths/{}",
                    escape_token(&super::served_path(prefix, &unescaped))
                );
                if let Some(rest) = rest {
                    out.push('/');
                    out.push_str(rest);
                }
                Some(out)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shared_names_are_prefixed_and_references_follow() {
        let a = json!({"components": {"schemas": {"User": {}, "Only": {}}}});
        let b = json!({"components": {"schemas": {"User": {}}, "parameters": {"Only": {}}}});
        let renames = Renames::find(&[("gh", &a), ("slack", &b)]);
        assert_eq!(renames.name(0, "schemas", "User"), "gh.User");
        assert_eq!(renames.name(1, "schemas", "User"), "slack.User");
        assert_eq!(renames.name(0, "schemas", "Only"), "Only");
        assert_eq!(renames.name(1, "parameters", "Only"), "Only");

        let mut value = json!({
            "a": {"$ref": "#/components/schemas/User"},
            "b": [{"$ref": "#/components/schemas/User/properties/id"}],
            "c": {"$ref": "#/components/schemas/Only"},
            "d": {"$ref": "#/paths/~1users~1{id}/get/parameters/0"},
            "example": {"$ref": "#/components/schemas/User"},
            "e": {"$ref": "other.json#/x"},
        });
        renames.rewrite(0, "gh", &mut value);
        assert_eq!(
            value,
            json!({
                "a": {"$ref": "#/components/schemas/gh.User"},
                "b": [{"$ref": "#/components/schemas/gh.User/properties/id"}],
                "c": {"$ref": "#/components/schemas/Only"},
                "d": {"$ref": "#/paths/~1gh~1users~1{id}/get/parameters/0"},
                "example": {"$ref": "#/components/schemas/User"},
                "e": {"$ref": "other.json#/x"},
            })
        );
    }
}

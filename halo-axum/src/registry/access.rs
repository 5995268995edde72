//! Who may call an operation: its OpenAPI `security` requirements, enforced.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Principal;

/// The callers an operation admits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Access {
    /// No requirement: no `security`, an empty list, or an empty alternative (`{}`).
    Anyone,
    /// An authenticated caller that holds every scope of at least one alternative (the
    /// scopes of all the schemes an alternative names, together).
    Scoped(Vec<BTreeSet<String>>),
}

impl Access {
    /// The access an operation's `security` (or the document's, when it has none) grants.
    pub(crate) fn derive(requirements: Option<&Value>) -> Self {
        let Some(alternatives) = requirements.and_then(Value::as_array) else {
            return Self::Anyone;
        };
        let mut scoped = Vec::new();
        for alternative in alternatives {
            let Some(schemes) = alternative.as_object() else {
                continue;
            };
            if schemes.is_empty() {
                return Self::Anyone;
            }
            let scopes: BTreeSet<String> = schemes
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if !scoped.contains(&scopes) {
                scoped.push(scopes);
            }
        }
        if scoped.is_empty() {
            Self::Anyone
        } else {
            Self::Scoped(scoped)
        }
    }

    /// The scopes `caller` lacks for the alternative it comes closest to (fewest missing).
    pub(crate) fn missing(&self, caller: &Principal) -> Vec<&str> {
        let Self::Scoped(alternatives) = self else {
            return Vec::new();
        };
        alternatives
            .iter()
            .map(|scopes| {
                scopes
                    .iter()
                    .map(String::as_str)
                    .filter(|scope| !caller.has_scope(scope))
                    .collect::<Vec<_>>()
            })
            .min_by_key(Vec::len)
            .unwrap_or_default()
    }

    /// Whether `caller` may call the operation.
    pub(crate) fn admits(&self, caller: Option<&Principal>) -> bool {
        match (self, caller) {
            (Self::Anyone, _) => true,
            (Self::Scoped(_), None) => false,
            (Self::Scoped(alternatives), Some(caller)) => alternatives
                .iter()
                .any(|scopes| scopes.iter().all(|scope| caller.has_scope(scope))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requirements_become_access() {
        assert_eq!(Access::derive(None), Access::Anyone);
        assert_eq!(Access::derive(Some(&json!([]))), Access::Anyone);
        assert_eq!(
            Access::derive(Some(&json!([{"bearer": ["a"]}, {}]))),
            Access::Anyone
        );
        let access = Access::derive(Some(&json!([
            {"bearer": ["books:write"], "key": ["admin"]},
            {"oauth": ["root"]}
        ])));
        let writer = Principal::new("w").with_scopes(["books:write"]);
        let both = Principal::new("b").with_scopes(["books:write", "admin"]);
        let root = Principal::new("r").with_scopes(["root"]);
        assert!(!access.admits(None));
        assert!(!access.admits(Some(&writer)));
        assert!(access.admits(Some(&both)));
        assert!(access.admits(Some(&root)));
        assert_eq!(access.missing(&writer), ["admin"]);
        assert_eq!(access.missing(&Principal::new("x")), ["root"]);
        let any_caller = Access::derive(Some(&json!([{"bearer": []}])));
        assert!(any_caller.admits(Some(&Principal::new("x"))));
        assert!(!any_caller.admits(None));
    }
}

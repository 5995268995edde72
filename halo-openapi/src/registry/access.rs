//! Who may call an operation: its OpenAPI `security` requirements, enforced.

use std::collections::BTreeSet;

use serde_json::Value;

use halo_auth::{Principal, Scheme};

use super::callers::Callers;

/// The callers an operation admits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Access {
    /// No requirement: no `security`, an empty list, or an empty alternative (`{}`).
    Anyone,
    /// An authenticated caller that passes at least one alternative.
    Scoped(Vec<Alternative>),
}

/// One alternative of a `security` list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Alternative {
    /// The scopes of every scheme it names, together.
    scopes: BTreeSet<String>,
    /// The ways of authenticating its schemes stand for; `None` when one of them is a scheme
    /// the document does not define in a form the layer knows (then any way passes).
    schemes: Option<Vec<Scheme>>,
}

impl Alternative {
    /// Whether the way `caller` authenticated is one of the alternative's schemes.
    fn fits(&self, caller: &Principal) -> bool {
        match (&self.schemes, caller.scheme()) {
            (Some(schemes), Some(scheme)) => schemes.contains(scheme),
            _ => true,
        }
    }

    fn admits(&self, caller: &Principal) -> bool {
        self.fits(caller) && self.scopes.iter().all(|scope| caller.has_scope(scope))
    }
}

impl Access {
    /// The access an operation's `security` (or the document's, when it has none) grants,
    /// with `schemes` the document's `components.securitySchemes`.
    pub(crate) fn derive(requirements: Option<&Value>, schemes: Option<&Value>) -> Self {
        let Some(alternatives) = requirements.and_then(Value::as_array) else {
            return Self::Anyone;
        };
        let mut scoped = Vec::new();
        for alternative in alternatives {
            let Some(names) = alternative.as_object() else {
                continue;
            };
            if names.is_empty() {
                return Self::Anyone;
            }
            let scopes = names
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            let schemes = names
                .keys()
                .map(|name| scheme(schemes?.get(name)?))
                .collect();
            let alternative = Alternative { scopes, schemes };
            if !scoped.contains(&alternative) {
                scoped.push(alternative);
            }
        }
        if scoped.is_empty() {
            Self::Anyone
        } else {
            Self::Scoped(scoped)
        }
    }

    /// The scopes `caller` lacks for the alternative it comes closest to (fewest missing,
    /// among those its way of authenticating fits).
    pub(crate) fn missing(&self, caller: &Principal) -> Vec<&str> {
        let Self::Scoped(alternatives) = self else {
            return Vec::new();
        };
        alternatives
            .iter()
            .filter(|alternative| alternative.fits(caller))
            .map(|alternative| {
                alternative
                    .scopes
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
                .any(|alternative| alternative.admits(caller)),
        }
    }
}

/// Who may call an operation: its `security` requirements and, when it names them, the
/// callers it is open to (`x-halo-callers`). Operations with equal classes share one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Class {
    pub(crate) access: Access,
    pub(crate) callers: Option<Callers>,
}

impl Class {
    /// Whether anyone may call: no requirement and no list of callers.
    pub(crate) fn is_open(&self) -> bool {
        self.access == Access::Anyone && self.callers.is_none()
    }

    /// Whether `caller` may call the operation.
    pub(crate) fn admits(&self, caller: Option<&Principal>) -> bool {
        self.access.admits(caller) && self.callers.as_ref().is_none_or(|c| c.admits(caller))
    }

    /// The scopes `caller` lacks; none when what keeps it out is the list of callers.
    pub(crate) fn missing(&self, caller: &Principal) -> Vec<&str> {
        match &self.callers {
            Some(callers) if !callers.admits(Some(caller)) => Vec::new(),
            _ => self.access.missing(caller),
        }
    }
}

/// The way of authenticating a security scheme object stands for.
fn scheme(definition: &Value) -> Option<Scheme> {
    let text = |key: &str| {
        definition
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match (text("type"), text("scheme").to_ascii_lowercase().as_str()) {
        ("http", "bearer") | ("oauth2" | "openIdConnect", _) => Some(Scheme::Bearer),
        ("http", "basic") => Some(Scheme::Basic),
        ("apiKey", _) if text("in") == "header" => http::HeaderName::try_from(text("name"))
            .ok()
            .map(Scheme::ApiKey),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderName;
    use serde_json::json;

    fn schemes() -> Value {
        json!({
            "bearer": {"type": "http", "scheme": "bearer"},
            "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "oauth": {"type": "oauth2", "flows": {}},
            "cookie": {"type": "apiKey", "in": "cookie", "name": "sid"}
        })
    }

    fn derive(requirements: Value) -> Access {
        Access::derive(Some(&requirements), Some(&schemes()))
    }

    #[test]
    fn requirements_become_access() {
        assert_eq!(Access::derive(None, None), Access::Anyone);
        assert_eq!(derive(json!([])), Access::Anyone);
        assert_eq!(derive(json!([{"bearer": ["a"]}, {}])), Access::Anyone);
        let access = derive(json!([
            {"bearer": ["books:write"], "key": ["admin"]},
            {"oauth": ["root"]}
        ]));
        let writer = Principal::new("w").with_scopes(["books:write"]);
        let both = Principal::new("b").with_scopes(["books:write", "admin"]);
        let root = Principal::new("r").with_scopes(["root"]);
        assert!(!access.admits(None));
        assert!(!access.admits(Some(&writer)));
        assert!(access.admits(Some(&both)));
        assert!(access.admits(Some(&root)));
        assert_eq!(access.missing(&writer), ["admin"]);
        assert_eq!(access.missing(&Principal::new("x")), ["root"]);
        let any_caller = derive(json!([{"bearer": []}]));
        assert!(any_caller.admits(Some(&Principal::new("x"))));
        assert!(!any_caller.admits(None));
    }

    #[test]
    fn the_way_of_authenticating_must_fit_a_named_scheme() {
        let key_only = derive(json!([{"key": []}]));
        let by_key = Principal::new("k")
            .authenticated_by(Scheme::ApiKey(HeaderName::from_static("x-api-key")));
        let by_other_key = Principal::new("o")
            .authenticated_by(Scheme::ApiKey(HeaderName::from_static("x-other")));
        let by_token = Principal::new("t").authenticated_by(Scheme::Bearer);
        let unmarked = Principal::new("u");
        assert!(key_only.admits(Some(&by_key)));
        assert!(!key_only.admits(Some(&by_other_key)));
        assert!(!key_only.admits(Some(&by_token)));
        assert!(
            key_only.admits(Some(&unmarked)),
            "an unmarked principal passes any scheme"
        );
        // OAuth 2 access tokens are bearer tokens.
        assert!(derive(json!([{"oauth": []}])).admits(Some(&by_token)));
        // A scheme the layer cannot tell (a cookie) lets any way pass.
        assert!(derive(json!([{"cookie": []}])).admits(Some(&by_token)));
        // Either alternative may fit.
        let either = derive(json!([{"key": []}, {"bearer": ["admin"]}]));
        assert!(either.admits(Some(&by_key)));
        assert!(!either.admits(Some(&by_token)));
        assert_eq!(either.missing(&by_token), ["admin"]);
    }
}

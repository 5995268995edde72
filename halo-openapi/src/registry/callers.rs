//! `x-halo-callers`: an operation open only to some callers, by their id (`allow`), or to
//! all but some (`deny`), each a list of case-insensitive globs (`*`, `?`, `[a-z]`).
//!
//! It narrows who may call an operation beyond its `security` requirements; a caller it
//! leaves out does not see the tool in discovery and is refused a call. Anonymous callers
//! pass no such list. The gateway writes it from policies that name their agents.

use glob::{MatchOptions, Pattern};
use halo_auth::Principal;
use halo_protocol::CALLERS_EXTENSION;
use serde_json::Value;

/// The globs are matched whole, ignoring case, `*` matching any text (`/` included).
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: false,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// The callers an operation is open to, by id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Callers {
    /// The ids let in; `None`: every identified caller not denied.
    allow: Option<Vec<Pattern>>,
    /// The ids kept out, whatever `allow` says.
    deny: Vec<Pattern>,
}

impl Callers {
    /// Reads the operation's `x-halo-callers`, if it has one; an error says what is wrong.
    pub(crate) fn read(operation: &Value) -> Result<Option<Self>, String> {
        let Some(value) = operation.get(CALLERS_EXTENSION) else {
            return Ok(None);
        };
        let Some(object) = value.as_object() else {
            return Err(
                "`x-halo-callers` is an object: {\"allow\": [...], \"deny\": [...]}".into(),
            );
        };
        if let Some(key) = object
            .keys()
            .find(|key| !matches!(key.as_str(), "allow" | "deny"))
        {
            return Err(format!(
                "`x-halo-callers` has `allow` and `deny`, not `{key}`"
            ));
        }
        let globs = |key: &str| -> Result<Option<Vec<Pattern>>, String> {
            let Some(list) = object.get(key) else {
                return Ok(None);
            };
            let Some(items) = list.as_array() else {
                return Err(format!("`x-halo-callers.{key}` is a list of caller ids"));
            };
            items
                .iter()
                .map(|item| {
                    let text = item.as_str().ok_or_else(|| {
                        format!("`x-halo-callers.{key}` holds caller ids as strings")
                    })?;
                    Pattern::new(text)
                        .map_err(|e| format!("`x-halo-callers.{key}`: `{text}` is not a glob: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        Ok(Some(Self {
            allow: globs("allow")?,
            deny: globs("deny")?.unwrap_or_default(),
        }))
    }

    /// Whether `caller` is among the callers let in.
    pub(crate) fn admits(&self, caller: Option<&Principal>) -> bool {
        let Some(caller) = caller else {
            return false;
        };
        let id = caller.id();
        let matches = |globs: &[Pattern]| globs.iter().any(|g| g.matches_with(id, OPTIONS));
        !matches(&self.deny) && self.allow.as_deref().is_none_or(matches)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn callers(value: Value) -> Callers {
        Callers::read(&json!({ "x-halo-callers": value }))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn allow_and_deny_are_globs_and_deny_wins() {
        let list = callers(json!({"allow": ["finance-*", "Auditor"], "deny": ["finance-intern"]}));
        let admits = |id: &str| list.admits(Some(&Principal::new(id)));
        assert!(admits("finance-agent"));
        assert!(admits("auditor"), "ids are matched ignoring case");
        assert!(!admits("finance-intern"));
        assert!(!admits("coupon-agent"));
        assert!(!list.admits(None), "anonymous callers pass no list");

        let open = callers(json!({"deny": ["bot/*"]}));
        assert!(open.admits(Some(&Principal::new("alice"))));
        assert!(!open.admits(Some(&Principal::new("bot/7"))));
        assert!(Callers::read(&json!({})).unwrap().is_none());
    }

    #[test]
    fn a_malformed_list_says_what_is_wrong() {
        for (value, says) in [
            (json!(["a"]), "is an object"),
            (json!({"allow": "a"}), "list of caller ids"),
            (json!({"allow": [1]}), "as strings"),
            (json!({"allow": ["[a"]}), "not a glob"),
            (json!({"only": ["a"]}), "not `only`"),
        ] {
            let error = Callers::read(&json!({ "x-halo-callers": value })).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }
}

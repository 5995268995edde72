//! Links between an upstream's tools (`effects.undo`, `next[].suggest`,
//! `lifecycle.replace_with`, `resilience.fallback`) name paths of the upstream; in the merged
//! document they name the same tools under the upstream's prefix.

use halo_protocol::link_target;
use serde_json::{Map, Value};

/// Moves the links of an operation's `x-halo-*` extensions under `/<upstream>`.
pub(super) fn prefix(operation: &mut Map<String, Value>, upstream: &str) {
    for (key, value) in operation.iter_mut() {
        let links: Vec<&mut Value> = match (key.as_str(), value) {
            ("x-halo-effects", Value::Object(effects)) => {
                effects.get_mut("undo").into_iter().collect()
            }
            ("x-halo-next", Value::Array(next)) => next
                .iter_mut()
                .filter_map(|n| n.get_mut("suggest"))
                .collect(),
            ("x-halo-lifecycle", Value::Object(lifecycle)) => {
                lifecycle.get_mut("replace_with").into_iter().collect()
            }
            ("x-halo-resilience", Value::Object(resilience)) => {
                resilience.get_mut("fallback").into_iter().collect()
            }
            _ => continue,
        };
        for link in links {
            if let Value::String(text) = link
                && let Some(prefixed) = prefixed(text, upstream)
            {
                *text = prefixed;
            }
        }
    }
}

/// `link` with its path under `/<upstream>`; `None` for a link to another host.
fn prefixed(link: &str, upstream: &str) -> Option<String> {
    link_target(link)?;
    let link = link.trim();
    // A method has no `/`: the first one starts the path.
    let (head, path) = link.split_at(link.find('/')?);
    Some(format!("{head}{}", super::served_path(upstream, path)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn links_follow_their_tools() {
        let mut operation = json!({
            "x-halo-effects": {"undo": "DELETE /api/books/{id}", "reversible": true},
            "x-halo-next": [{"when": "ok", "suggest": "/api/orders?status=open"}],
            "x-halo-lifecycle": {"replace_with": "https://elsewhere.example/api"},
            "x-halo-resilience": {"fallback": "/"}
        });
        prefix(operation.as_object_mut().unwrap(), "books");
        assert_eq!(
            operation,
            json!({
                "x-halo-effects": {"undo": "DELETE /books/api/books/{id}", "reversible": true},
                "x-halo-next": [{"when": "ok", "suggest": "/books/api/orders?status=open"}],
                "x-halo-lifecycle": {"replace_with": "https://elsewhere.example/api"},
                "x-halo-resilience": {"fallback": "/books"}
            })
        );
    }
}

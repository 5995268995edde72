//! Links between tools (`effects.undo`, `next[].suggest`, `replace_with`,
//! `resilience.fallback`): `/path`, `/path?query` or `METHOD /path`, or an absolute URL.

/// The method (when the link names one) and the path of a link on the same API; `None` for
/// an absolute URL, which points at another host and cannot be checked against this API's
/// tools. The query and fragment are left out.
///
/// ```
/// use halo_protocol::link_target;
///
/// assert_eq!(link_target("POST /api/payments/{id}/refund"), Some((Some("POST"), "/api/payments/{id}/refund")));
/// assert_eq!(link_target("/api/orders?status=open"), Some((None, "/api/orders")));
/// assert_eq!(link_target("https://other.example/api"), None);
/// ```
#[must_use]
pub fn link_target(link: &str) -> Option<(Option<&str>, &str)> {
    let link = link.trim();
    let (method, link) = match link.split_once(' ') {
        Some((method, rest)) if method.bytes().all(|b| b.is_ascii_uppercase()) => {
            (Some(method), rest.trim())
        }
        _ => (None, link),
    };
    let path = link.split(['?', '#']).next().unwrap_or_default();
    path.starts_with('/').then_some((method, path))
}

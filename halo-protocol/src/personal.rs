//! Whether an answer depends on who asked, as its caching headers say: what tells a client
//! that discovery showed it only what its credentials (or their absence) may see.

/// Whether an answer with these `Cache-Control` and `Vary` headers depends on the caller:
/// `Cache-Control: private`, or a `Vary` naming `Authorization`, `Cookie` or `*` (RFC 9111
/// §5.2.2.7, RFC 9110 §12.5.5). A HALO server whose discovery shows each caller the tools it
/// may call says so this way (`Vary: accept, authorization`); one that shows every caller
/// everything does not (`Vary: accept`). Headers that are missing say nothing: `false`.
///
/// ```
/// use halo_protocol::depends_on_caller;
///
/// assert!(depends_on_caller(Some("private, max-age=60"), Some("accept, authorization")));
/// assert!(depends_on_caller(Some("max-age=60"), Some("Accept, Authorization, x-api-key")));
/// assert!(depends_on_caller(None, Some("*")));
/// assert!(!depends_on_caller(Some("public, max-age=60"), Some("accept")));
/// assert!(!depends_on_caller(None, None));
/// ```
#[must_use]
pub fn depends_on_caller(cache_control: Option<&str>, vary: Option<&str>) -> bool {
    let private = cache_control.is_some_and(|cache_control| {
        cache_control.split(',').any(|directive| {
            let name = directive.split('=').next().unwrap_or_default();
            name.trim().eq_ignore_ascii_case("private")
        })
    });
    let varies = vary.is_some_and(|vary| {
        vary.split(',').map(str::trim).any(|name| {
            name == "*"
                || name.eq_ignore_ascii_case("authorization")
                || name.eq_ignore_ascii_case("cookie")
        })
    });
    private || varies
}

#[cfg(test)]
mod tests {
    use super::depends_on_caller;

    #[test]
    fn only_private_answers_and_credential_headers_count() {
        // `private="set-cookie"` names fields that are private: still private.
        assert!(depends_on_caller(
            Some(r#"max-age=60, private="set-cookie""#),
            None
        ));
        assert!(depends_on_caller(Some("no-cache"), Some("cookie")));
        // A header whose name merely contains one of them, or a directive that does.
        assert!(!depends_on_caller(
            Some("public, x-private-ish"),
            Some("accept, x-authorization-hint, accept-language")
        ));
        assert!(!depends_on_caller(Some("no-store"), Some("")));
    }
}

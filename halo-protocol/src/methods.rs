//! What a request method promises about repeating it (RFC 9110 §9.2), shared by MCP hints,
//! lint and the client's retry rule so that they never disagree.

/// Methods that promise to change nothing (RFC 9110 §9.2.1): `GET`, `HEAD`, `OPTIONS`,
/// `TRACE`, and `QUERY` (the safe method with a body, draft-ietf-httpbis-safe-method-w-body).
const SAFE: [&str; 5] = ["GET", "HEAD", "OPTIONS", "TRACE", "QUERY"];

/// Whether a method is safe: a request with it changes nothing on the server (RFC 9110
/// §9.2.1). The name is compared without regard to case, as tool schemas spell it either way.
///
/// ```
/// use halo_protocol::is_safe_method;
///
/// assert!(is_safe_method("GET"));
/// assert!(is_safe_method("query"));
/// assert!(!is_safe_method("DELETE"));
/// ```
#[must_use]
pub fn is_safe_method(method: &str) -> bool {
    SAFE.iter().any(|safe| method.eq_ignore_ascii_case(safe))
}

/// Whether a method is idempotent: repeating a request with it has the effect of sending it
/// once (RFC 9110 §9.2.2): every safe method, `PUT` and `DELETE`. A route may promise more
/// (`limits.idempotent`); that is the schema's to say, not the method's.
///
/// ```
/// use halo_protocol::is_idempotent_method;
///
/// assert!(is_idempotent_method("PUT"));
/// assert!(is_idempotent_method("HEAD"));
/// assert!(!is_idempotent_method("POST"));
/// assert!(!is_idempotent_method("PATCH"));
/// ```
#[must_use]
pub fn is_idempotent_method(method: &str) -> bool {
    is_safe_method(method)
        || method.eq_ignore_ascii_case("PUT")
        || method.eq_ignore_ascii_case("DELETE")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_methods_are_idempotent_and_writes_are_not_safe() {
        for method in SAFE {
            assert!(is_idempotent_method(method), "{method}");
        }
        for method in ["POST", "PUT", "PATCH", "DELETE", "CONNECT", "", "GETS"] {
            assert!(!is_safe_method(method), "{method}");
        }
        for method in ["POST", "PATCH", "CONNECT", "", "PUTS"] {
            assert!(!is_idempotent_method(method), "{method}");
        }
        assert!(is_safe_method("Options"));
    }
}

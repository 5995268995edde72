//! JSON Pointer reference tokens (RFC 6901), as problem details' `errors` and lint findings
//! point into documents with them.

use std::borrow::Cow;

/// `name` as one reference token of a JSON Pointer: `~` written `~0`, `/` written `~1`.
///
/// ```
/// use halo_protocol::{escape_token, unescape_token};
///
/// assert_eq!(escape_token("a/b~c"), "a~1b~0c");
/// assert_eq!(unescape_token("a~1b~0c"), "a/b~c");
/// assert_eq!(escape_token("plain"), "plain");
/// ```
#[must_use]
pub fn escape_token(name: &str) -> Cow<'_, str> {
    if name.contains(['~', '/']) {
        Cow::Owned(name.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(name)
    }
}

/// The name a JSON Pointer reference token stands for: the inverse of [`escape_token`].
#[must_use]
pub fn unescape_token(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for name in ["", "a", "a/b", "~", "~1", "/~0/", "ünï/cödé"] {
            assert_eq!(unescape_token(&escape_token(name)), name, "{name}");
        }
        // `~01` is `~` then `1`, not `/`.
        assert_eq!(unescape_token("~01"), "~1");
        assert_eq!(escape_token("~1"), "~01");
    }
}

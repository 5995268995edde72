//! Reading `WWW-Authenticate` challenges (RFC 9110 §11.6.1): the parameters of a `Bearer`
//! challenge (RFC 6750 §3), such as `resource_metadata` (RFC 9728 §5.1).

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// The longest challenge read; a longer header is ignored.
const MAX_CHALLENGE: usize = 8 * 1024;

/// The `resource_metadata` parameter of the first `Bearer` challenge that has one, in any of
/// the answer's `WWW-Authenticate` headers.
pub(crate) fn resource_metadata(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter(|value| value.len() <= MAX_CHALLENGE)
        .find_map(|value| bearer_param(value, "resource_metadata"))
}

/// RFC 9110 §5.6.2: a `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The parameter `name` of a `Bearer` challenge in one header value, which may hold several
/// challenges (`Basic realm="a", Bearer realm="b", resource_metadata="..."`).
fn bearer_param(value: &str, name: &str) -> Option<String> {
    let mut rest = value;
    let mut bearer = false;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return None;
        }
        let len = rest.find(|c: char| !is_tchar(c)).unwrap_or(rest.len());
        if len == 0 {
            // Not a token (the padding of a token68, say): skip a character.
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str();
            continue;
        }
        let token = &rest[..len];
        let after = rest[len..].trim_start_matches([' ', '\t']);
        if let Some(assigned) = after.strip_prefix('=') {
            // A parameter of the current challenge.
            let assigned = assigned.trim_start_matches([' ', '\t']);
            let (parameter, remaining) = match assigned.strip_prefix('"') {
                Some(quoted) => quoted_string(quoted)?,
                None => {
                    let len = assigned
                        .find(|c: char| !is_tchar(c))
                        .unwrap_or(assigned.len());
                    (assigned[..len].to_owned(), &assigned[len..])
                }
            };
            if bearer && token.eq_ignore_ascii_case(name) {
                return Some(parameter);
            }
            rest = remaining;
        } else {
            // A new challenge's scheme.
            bearer = token.eq_ignore_ascii_case("bearer");
            rest = after;
        }
    }
}

/// A quoted string's content after its opening quote (escapes undone), and what follows its
/// closing quote; `None` when it is not closed.
fn quoted_string(text: &str) -> Option<(String, &str)> {
    let mut content = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((content, &text[at + 1..])),
            '\\' => content.push(chars.next()?.1),
            c => content.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_challenge_parameter_is_found() {
        let url = "https://api.example/.well-known/oauth-protected-resource";
        for header in [
            format!(r#"Bearer resource_metadata="{url}""#),
            format!(r#"Bearer realm="Books", error="invalid_token", resource_metadata="{url}""#),
            format!(r#"Basic realm="x", Bearer realm="a,b", resource_metadata="{url}""#),
            format!(r#"Negotiate abc==, bearer Resource_Metadata = "{url}""#),
        ] {
            assert_eq!(
                bearer_param(&header, "resource_metadata").as_deref(),
                Some(url)
            );
        }
        assert_eq!(
            bearer_param(r#"Bearer realm="a\"b", x="c""#, "realm").as_deref(),
            Some(r#"a"b"#)
        );
        assert_eq!(
            bearer_param("Bearer realm=books", "realm").as_deref(),
            Some("books")
        );
        // Another scheme's parameter, an unclosed string, nothing.
        assert_eq!(
            bearer_param(r#"Basic resource_metadata="x""#, "resource_metadata"),
            None
        );
        assert_eq!(
            bearer_param(r#"Bearer resource_metadata="x"#, "resource_metadata"),
            None
        );
        assert_eq!(bearer_param("", "resource_metadata"), None);
    }
}

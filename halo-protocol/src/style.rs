//! Writing arguments the way OpenAPI's `style` and `explode` say: query parameters, and the
//! fields of `application/x-www-form-urlencoded` and `multipart/form-data` bodies.
//!
//! | style | `explode` | array `[a, b]` | object `{k: v}` |
//! |---|---|---|---|
//! | `form` (the default) | `true` | `n=a&n=b` | `k=v` |
//! | `form` | `false` | `n=a,b` | `n=k,v` |
//! | `spaceDelimited` / `pipeDelimited` | `false` | `n=a b` / `n=a\|b` | — |
//! | `deepObject` | any | `n[0]=a&n[1]=b` | `n[k]=v` |
//!
//! Values nested deeper than a style defines are written with brackets
//! (`items[0][price]=p`, `metadata[k]=v`), as Stripe, Rails and PHP read them.

use std::hash::{DefaultHasher, Hash, Hasher};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

/// What `application/x-www-form-urlencoded` leaves as it is (the WHATWG URL standard's set),
/// besides the space, which becomes `+`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// The `(key, text)` pairs of one argument `name` written in `style` (`None`: `form`), with
/// `explode` (`None`: the style's default). `null` writes nothing.
///
/// # Errors
/// A value the style cannot write (an object in a delimited style), named by key.
pub(crate) fn pairs(
    name: &str,
    value: &Value,
    style: Option<&str>,
    explode: Option<bool>,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let style = style.unwrap_or("form");
    let explode = explode.unwrap_or(style == "form");
    match (style, value) {
        (_, Value::Null) => {}
        ("deepObject", _) => brackets(name, value, out),
        ("form", Value::Array(items)) if explode => {
            for item in items {
                brackets(name, item, out);
            }
        }
        ("form", Value::Object(map)) if explode => {
            for (key, inner) in map {
                brackets(key, inner, out);
            }
        }
        ("form" | "spaceDelimited" | "pipeDelimited", Value::Array(items)) => {
            let separator = match style {
                "spaceDelimited" => " ",
                "pipeDelimited" => "|",
                _ => ",",
            };
            let texts = items
                .iter()
                .map(|item| text(item).ok_or_else(|| nested(name)))
                .collect::<Result<Vec<_>, _>>()?;
            out.push((name.to_owned(), texts.join(separator)));
        }
        ("form", Value::Object(map)) => {
            let mut texts = Vec::with_capacity(map.len() * 2);
            for (key, inner) in map {
                texts.push(key.clone());
                texts.push(text(inner).ok_or_else(|| nested(name))?);
            }
            out.push((name.to_owned(), texts.join(",")));
        }
        (_, Value::Object(_)) => {
            return Err(format!(
                "`{name}` is an object, which style `{style}` cannot write"
            ));
        }
        (_, scalar) => brackets(name, scalar, out),
    }
    Ok(())
}

fn nested(name: &str) -> String {
    format!("`{name}` holds nested values, which its style cannot write")
}

/// `key=v` for a scalar, `key[k]=…` for an object's members, `key[0]=…` for an array's
/// items; `null` nothing.
fn brackets(key: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (member, inner) in map {
                brackets(&format!("{key}[{member}]"), inner, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                brackets(&format!("{key}[{i}]"), item, out);
            }
        }
        scalar => out.push((key.to_owned(), text(scalar).unwrap_or_default())),
    }
}

/// A scalar as text; `None` for arrays, objects and `null`.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Pairs as an `application/x-www-form-urlencoded` body.
pub(crate) fn urlencoded(pairs: &[(String, String)]) -> Vec<u8> {
    let mut out = String::new();
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, key);
        out.push('=');
        encode_into(&mut out, value);
    }
    out.into_bytes()
}

fn encode_into(out: &mut String, text: &str) {
    for (i, part) in text.split(' ').enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.extend(utf8_percent_encode(part, FORM));
    }
}

/// One part of a `multipart/form-data` body.
#[derive(Debug)]
struct Part {
    name: String,
    content_type: &'static str,
    bytes: Vec<u8>,
}

/// The body fields as `multipart/form-data`: its `Content-Type` (with the boundary) and its
/// bytes. A field with a `style` (from the body's `encoding`) is one text part per pair that
/// style writes (`meta[k]` for `deepObject`); otherwise strings and other scalars are text
/// parts, arrays of scalars repeat their part, and objects and arrays of anything else are
/// JSON parts (OpenAPI's defaults).
///
/// # Errors
/// A value its style cannot write.
pub(crate) fn multipart<'s>(
    fields: &Map<String, Value>,
    style_of: impl Fn(&str) -> (Option<&'s str>, Option<bool>),
) -> Result<(String, Vec<u8>), String> {
    let mut parts = Vec::new();
    for (name, value) in fields {
        if let (Some(style), explode) = style_of(name) {
            let mut pairs_of = Vec::new();
            pairs(name, value, Some(style), explode, &mut pairs_of)?;
            parts.extend(pairs_of.into_iter().map(|(name, text)| Part {
                name,
                content_type: "text/plain; charset=utf-8",
                bytes: text.into_bytes(),
            }));
            continue;
        }
        let scalar_items = match value {
            Value::Array(items) if items.iter().all(|item| text(item).is_some()) => Some(items),
            _ => None,
        };
        match (value, scalar_items) {
            (Value::Null, _) => {}
            (_, Some(items)) => parts.extend(items.iter().map(|item| Part {
                name: name.clone(),
                content_type: "text/plain; charset=utf-8",
                bytes: text(item).unwrap_or_default().into_bytes(),
            })),
            (Value::Object(_) | Value::Array(_), None) => parts.push(Part {
                name: name.clone(),
                content_type: "application/json",
                bytes: value.to_string().into_bytes(),
            }),
            (scalar, None) => parts.push(Part {
                name: name.clone(),
                content_type: "text/plain; charset=utf-8",
                bytes: text(scalar).unwrap_or_default().into_bytes(),
            }),
        }
    }
    let boundary = boundary(&parts);
    let mut body = Vec::new();
    for part in &parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        // Quotes and line breaks in a name would end the header: percent-encode them.
        let name = part
            .name
            .replace('%', "%25")
            .replace('"', "%22")
            .replace('\r', "%0D")
            .replace('\n', "%0A");
        body.extend_from_slice(
            format!(
                "Content-Disposition: form-data; name=\"{name}\"\r\nContent-Type: {}\r\n\r\n",
                part.content_type
            )
            .as_bytes(),
        );
        body.extend_from_slice(&part.bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok((
        format!(
            "{}; boundary={boundary}",
            crate::Form::Multipart.media_type()
        ),
        body,
    ))
}

/// A boundary that no part contains: derived from the content (so the same call encodes
/// the same way), tried again with a counter in the unlikely case it occurs.
fn boundary(parts: &[Part]) -> String {
    let mut hasher = DefaultHasher::new();
    for part in parts {
        part.name.hash(&mut hasher);
        part.bytes.hash(&mut hasher);
    }
    let seed = hasher.finish();
    (0u64..)
        .map(|n| format!("halo-{:016x}", seed.wrapping_add(n)))
        .find(|candidate| {
            !parts.iter().any(|part| {
                part.bytes
                    .windows(candidate.len())
                    .any(|window| window == candidate.as_bytes())
            })
        })
        .expect("a boundary no part contains")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(name: &str, value: Value, style: Option<&str>, explode: Option<bool>) -> String {
        let mut out = Vec::new();
        pairs(name, &value, style, explode, &mut out).unwrap();
        String::from_utf8(urlencoded(&out)).unwrap()
    }

    #[test]
    fn styles_as_openapi_writes_them() {
        assert_eq!(written("n", json!(["a", "b"]), None, None), "n=a&n=b");
        assert_eq!(
            written("n", json!({"j": 2, "k": "v"}), None, None),
            "j=2&k=v"
        );
        assert_eq!(
            written("n", json!(["a", "b"]), Some("form"), Some(false)),
            "n=a%2Cb"
        );
        assert_eq!(
            written("n", json!({"k": "v"}), Some("form"), Some(false)),
            "n=k%2Cv"
        );
        assert_eq!(
            written("n", json!(["a", "b"]), Some("spaceDelimited"), None),
            "n=a+b"
        );
        assert_eq!(
            written("n", json!(["a", "b"]), Some("pipeDelimited"), None),
            "n=a%7Cb"
        );
        assert_eq!(written("n", json!(null), None, None), "");
        assert_eq!(written("q", json!("two words"), None, None), "q=two+words");
    }

    #[test]
    fn deep_objects_nest_with_brackets() {
        assert_eq!(
            written(
                "created",
                json!({"gte": 1, "lt": 2}),
                Some("deepObject"),
                Some(true)
            ),
            "created%5Bgte%5D=1&created%5Blt%5D=2"
        );
        let mut out = Vec::new();
        pairs(
            "items",
            &json!([{"price": "p_1", "quantity": 2}]),
            Some("deepObject"),
            Some(true),
            &mut out,
        )
        .unwrap();
        pairs(
            "metadata",
            &json!({"k": "v"}),
            Some("deepObject"),
            None,
            &mut out,
        )
        .unwrap();
        pairs(
            "expand",
            &json!(["x", "y"]),
            Some("deepObject"),
            Some(true),
            &mut out,
        )
        .unwrap();
        let keys: Vec<(&str, &str)> = out.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            keys,
            [
                ("items[0][price]", "p_1"),
                ("items[0][quantity]", "2"),
                ("metadata[k]", "v"),
                ("expand[0]", "x"),
                ("expand[1]", "y")
            ]
        );
    }

    #[test]
    fn what_a_style_cannot_write_is_an_error_naming_the_argument() {
        let mut out = Vec::new();
        let error = pairs(
            "n",
            &json!([{"a": 1}]),
            Some("pipeDelimited"),
            None,
            &mut out,
        )
        .unwrap_err();
        assert!(error.contains("`n`"), "{error}");
        assert!(
            pairs(
                "n",
                &json!({"a": 1}),
                Some("spaceDelimited"),
                None,
                &mut out
            )
            .is_err()
        );
    }

    #[test]
    fn multipart_parts_and_a_boundary_no_part_contains() {
        let mut fields = Map::new();
        fields.insert("title".into(), json!("Dune"));
        fields.insert("tags".into(), json!(["a", "b"]));
        fields.insert("meta".into(), json!({"k": 1}));
        fields.insert("skip".into(), json!(null));
        fields.insert("link".into(), json!({"create": true}));
        let style_of = |name: &str| match name {
            "link" => (Some("deepObject"), Some(true)),
            _ => (None, None),
        };
        let (content_type, body) = multipart(&fields, style_of).unwrap();
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let text = String::from_utf8(body).unwrap();
        assert_eq!(text.matches(&format!("--{boundary}\r\n")).count(), 5);
        assert!(text.contains(
            "name=\"link[create]\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\ntrue\r\n"
        ));
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
        assert!(
            text.contains("name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"k\":1}\r\n")
        );
        assert!(!text.contains("skip"));
        // The same fields encode the same way.
        assert_eq!(multipart(&fields, style_of).unwrap().1, text.into_bytes());
    }
}

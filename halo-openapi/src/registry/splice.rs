//! Serialising a value with pre-serialised parts in places of it.
//!
//! A tool's schema is serialised with serde as usual, except where a large shared part goes
//! (a `$defs` object, the output schema): there it holds a marker string, and the marker's
//! bytes are replaced by the part's [`Rope`]. A marker carries a random number drawn once
//! per process, so no string of a document can pass for one.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::rope::Rope;

/// The marker text before the part's index.
fn prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let random = |salt: u64| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(salt);
            hasher.finish()
        };
        format!("halo-part-{:016x}{:016x}-", random(1), random(2))
    })
}

/// The marker of part `index`, to put where the part goes.
pub(crate) fn marker(index: usize) -> Value {
    Value::String(format!("{}{index}", prefix()))
}

/// `value` serialised, each marker (with its quotes) replaced by `parts[index]`.
///
/// # Panics
/// When `value` cannot be serialised to JSON (a map with non-string keys), which the
/// registry's types never are.
pub(crate) fn splice(value: &impl Serialize, parts: &[Rope]) -> Rope {
    let bytes = Bytes::from(serde_json::to_vec(value).expect("HALO types serialise to JSON"));
    if parts.is_empty() {
        return Rope::from(bytes);
    }
    let needle = format!("\"{}", prefix());
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut out = Vec::with_capacity(parts.len() * 2 + 1);
    let mut start = 0;
    while let Some(found) = finder.find(&bytes[start..]) {
        let at = start + found;
        let digits_start = at + needle.len();
        let digits = bytes[digits_start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = digits_start + digits;
        let index = std::str::from_utf8(&bytes[digits_start..end])
            .ok()
            .and_then(|digits| digits.parse::<usize>().ok());
        match index {
            Some(index) if index < parts.len() && bytes.get(end) == Some(&b'"') => {
                out.push(Rope::from(bytes.slice(start..at)));
                out.push(parts[index].clone());
                start = end + 1;
            }
            _ => {
                out.push(Rope::from(bytes.slice(start..digits_start)));
                start = digits_start;
            }
        }
    }
    out.push(Rope::from(bytes.slice(start..)));
    Rope::join(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_become_their_parts() {
        let value = json!({"a": marker(1), "b": [marker(0), "halo-part-"], "c": "text"});
        let rope = splice(
            &value,
            &[Rope::from_static(b"{\"x\":1}"), Rope::from_static(b"[2]")],
        );
        let text = rope.to_bytes();
        let parsed: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(
            parsed,
            json!({"a": [2], "b": [{"x": 1}, "halo-part-"], "c": "text"})
        );
    }

    #[test]
    fn strings_that_look_like_markers_stay_text() {
        let fake = format!("{}7", prefix());
        let value = json!({"a": fake, "b": format!("{}x", prefix())});
        let rope = splice(&value, &[Rope::from_static(b"1")]);
        let parsed: Value = serde_json::from_slice(&rope.to_bytes()).unwrap();
        assert_eq!(parsed, value);
    }
}

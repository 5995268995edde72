//! How the store names its keys so that a Redis Cluster can hold them.
//!
//! A cluster runs a script on one node, so every key one script touches must be in one hash
//! slot. Redis hashes only the text between a key's first `{` and the next `}` (its hash
//! tag) when there is one, so the keys that go together are written `<prefix>{<tag>}<rest>`
//! with one tag:
//!
//! | keys | tag |
//! |---|---|
//! | a tool's limits checked together | `rate:<tool>` |
//! | an idempotency record and its caller's count of records | `idem:<digest of the caller>` |
//! | a streamed call's events and what is known of it | `call:<id>` |
//! | every circuit of a layer (read together) | `circuits` |
//! | every approval and its indexes | `approvals` |
//!
//! Keys that no script touches together with another (a tool's own rate per caller) carry
//! no tag: they spread over the cluster. With one server tags change nothing. Neither the
//! prefix nor a tag holds a brace ([`RedisStore::prefix`](super::RedisStore::prefix) drops
//! them), so a key's tag is always the one written here.

use std::fmt::Write;

use sha2::{Digest, Sha256};

use super::Inner;

/// The slots of a cluster.
const SLOTS: u16 = 16_384;

/// The hash slot of `key` in a Redis Cluster: CRC-16 (XMODEM) of its hash tag, or of the
/// whole key when it has none, modulo 16,384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// The text between the first `{` and the next `}`, when that text is not empty.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&byte| byte == b'{')?;
    let after = &key[open + 1..];
    let close = after.iter().position(|&byte| byte == b'}')?;
    (close > 0).then(|| &after[..close])
}

/// `text` without braces, which would end or start a hash tag.
pub(crate) fn without_braces(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '{' | '}')).collect()
}

/// The SHA-256 of `text` in hexadecimal: keys that must not store what they count.
pub(crate) fn digest(text: &str) -> String {
    let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    digest
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

impl Inner {
    /// `<prefix>{<tag>}<rest>`: a key in the slot of `tag` (its braces dropped; an empty one
    /// is `_`).
    pub(crate) fn tagged(&self, tag: &str, rest: &str) -> String {
        let prefix = &self.config.prefix;
        let mut key = String::with_capacity(prefix.len() + tag.len() + rest.len() + 3);
        key.push_str(prefix);
        key.push('{');
        let tag = without_braces(tag);
        key.push_str(if tag.is_empty() { "_" } else { &tag });
        key.push('}');
        key.push_str(rest);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_clusters() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"123456789"), 0x31C3);
        assert_eq!(slot(b"foo"), 12_182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_ne!(slot(b"foo{}{bar}"), slot(b"bar"));
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
    }

    #[test]
    fn braces_never_reach_a_tag() {
        assert_eq!(without_braces("a{b}c:"), "abc:");
        assert_eq!(digest("x").len(), 64);
    }
}

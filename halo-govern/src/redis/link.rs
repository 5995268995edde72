//! The store's connection lent to what lives in Redis outside governance: the approvals of
//! held calls (`approval::redis`). One connection, one pause after a failure, one prefix.

use std::fmt;
use std::sync::Arc;

use redis::{FromRedisValue, Script};

pub use super::codec::{decode_headers, encode_headers};
pub use super::connection::Operation;
use super::{Inner, keys};

/// A handle on a [`RedisStore`](super::RedisStore)'s connection and key prefix.
#[derive(Clone)]
pub struct RedisLink(pub(super) Arc<Inner>);

impl fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedisLink").field(&self.0).finish()
    }
}

impl RedisLink {
    /// Runs `script` with `keys` and `args` for `operation`; `None` when Redis fails or is
    /// paused after a failure (counted and logged as the store's own failures are).
    pub async fn run<T: FromRedisValue>(
        &self,
        operation: Operation,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        self.0.run(operation, script, keys, args).await
    }

    /// Whether Redis answers a `PING` now, within the store's timeout.
    pub async fn ping(&self) -> bool {
        self.0.ping().await
    }

    /// `<prefix>{<tag>}<kind><text>`: a key of the store's own, under its prefix, in the
    /// hash slot of `tag` (the keys one script touches share a tag).
    pub(crate) fn key(&self, tag: &str, kind: &str, text: &str) -> String {
        self.0.tagged(tag, &format!("{kind}{text}"))
    }

    /// `<prefix>{<tag>}<kind><SHA-256 of text, in hex>`: a key that does not store `text`
    /// itself.
    pub(crate) fn digest_key(&self, tag: &str, kind: &str, text: &str) -> String {
        self.key(tag, kind, &keys::digest(text))
    }
}

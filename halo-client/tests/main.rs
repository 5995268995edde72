//! halo-client's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

#[path = "../../tests/shared/books_api.rs"]
mod books_api;
mod support;

mod approval_client;
mod approval_wait;
mod breaker;
mod cancel;
mod credentials;
mod discover_since;
mod discovery;
mod invoke;
mod oauth;
mod oauth_discovery;
mod retry;
#[cfg(feature = "rig")]
mod rig;
mod scheme_key;
mod search;
#[cfg(feature = "ws")]
mod socket;
mod stream;

//! halo-tests's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

#[path = "../../halo-client/tests/support/sse.rs"]
#[allow(dead_code, unreachable_pub, missing_docs, clippy::all)]
mod sse;

mod agent_bookstore;
mod agent_progressive;
mod client_bookstore;
mod corpus_read;
mod forms_stripe;
mod interop_client;
mod interop_fastapi;
mod mcp_bookstore;
mod playground_browser;
mod progressive_github;
mod stream_bookstore;

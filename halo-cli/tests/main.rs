//! halo-cli's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

#[path = "../../tests/shared/books_api.rs"]
mod books_api;
mod common;
#[path = "../../halo-client/tests/support/sse.rs"]
#[allow(dead_code, unreachable_pub)]
mod sse;

mod agent;
mod approval_cli;
mod cancel;
mod cli;
mod gateway;
mod interop_fastapi;
mod lint;
mod mcp;
mod mcp_tasks;
mod oauth;
mod search;
mod stream;

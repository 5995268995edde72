//! halo-gateway's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

#[path = "../../halo-client/tests/support/sse.rs"]
#[allow(dead_code, unreachable_pub, missing_docs, clippy::all)]
mod sse;

mod conformance;
mod gateway;
mod halo_upstream;
mod harness;
mod interop_fastapi;
mod mcp;
mod mcp_upstream;
mod oauth;
mod reload;

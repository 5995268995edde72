//! halo-agent's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

mod common;

mod agent;
mod anthropic;
mod openai;
mod progressive;

//! `bookstore-agent`: asks an LLM agent a question about the sample bookstore.
//!
//! ```text
//! cargo run -p bookstore &
//! HALO_LLM_BASE_URL=http://127.0.0.1:11434/v1 HALO_LLM_MODEL=qwen2.5:7b \
//!     cargo run -p bookstore-agent -- "Is Dune in stock?"
//! ```

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    bookstore_agent::run(bookstore_agent::Settings::parse()).await
}

//! `bookstore-rig-agent`: asks a rig agent a question about the sample bookstore.
//!
//! ```text
//! cargo run -p bookstore &
//! HALO_LLM_BASE_URL=http://127.0.0.1:11434/v1 HALO_LLM_MODEL=qwen2.5:7b \
//!     cargo run -p bookstore-rig-agent -- "Is Dune in stock?"
//! ```

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    bookstore_rig_agent::run(bookstore_rig_agent::Settings::parse()).await
}

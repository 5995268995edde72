//! `halo`: the command-line client of HALO APIs.
//!
//! HALO APIs describe themselves to LLM agents: `OPTIONS /` with `Accept:
//! application/llm+json` lists their tools, and `OPTIONS` on a path gives each operation's
//! schema. `halo` reads both, calls operations with arguments placed where their schemas say
//! (and streams their events), exports the tools for LLM APIs, and pins them so that changes
//! can be reviewed; `halo mcp` serves them to MCP clients over stdio; `halo lint` checks
//! the quality of their descriptions.
//!
//! ```text
//! halo discover http://127.0.0.1:3000 --tags books
//! halo search http://127.0.0.1:3000 "is it raining in Lisbon" --limit 3
//! halo describe http://127.0.0.1:3000 /api/books/1
//! halo --bearer demo-admin call http://127.0.0.1:3000 /api/books -X POST --data @book.json
//! halo stream http://127.0.0.1:3000 /api/books/{id}/summary -X POST --data '{"id": 1}'
//! halo export http://127.0.0.1:3000 --format anthropic
//! halo export https://api.example.com --format openai --q "open an issue" --max 20 --strict
//! halo pin http://127.0.0.1:3000 --out bookstore.pin.json
//! halo diff http://127.0.0.1:3000 bookstore.pin.json
//! halo --bearer demo-admin approvals http://127.0.0.1:3000
//! halo --bearer demo-admin deny http://127.0.0.1:3000 3f0c --reason "the charge is disputed"
//! halo --bearer demo-admin lint http://127.0.0.1:3000 -D warnings
//! halo lint --openapi openapi.json -D warnings
//! halo --bearer demo-reader mcp http://127.0.0.1:3000 --tags books
//! halo gateway check gateway.yaml
//! halo gateway run gateway.yaml
//! halo --bearer demo-reader agent http://127.0.0.1:3000 "Is Dune in stock?" \
//!     --llm-base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
//! ```
//!
//! Exit status: 0 on success, 1 when the server answered 4xx or 5xx or does not describe
//! what was asked (or `diff` found a change, or a stream ended with `tool_error`, or `lint`
//! found an error, or a call's approval was denied, expired or withdrawn), 2 for usage,
//! network and other errors, 130 when Ctrl-C interrupted `call` or `stream`.

mod agent;
mod approvals;
mod cli;
mod connect;
mod failure;
mod gateway;
mod interrupt;
mod lint;
mod mcp;
mod output;
mod run;
mod stream;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let json = cli.global.json;
    run::run(cli).unwrap_or_else(|failure| failure.report(json))
}

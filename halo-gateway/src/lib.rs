//! One governed entry for the APIs an organisation's agents call.
//!
//! `halo-gateway` reads a configuration naming upstream APIs (by their OpenAPI documents)
//! and policies, compiles every upstream's operations into one HALO registry, and serves it
//! with the [halo-axum](halo_axum) layer in front of a forwarder: discovery and search,
//! `/mcp`, the playground, argument validation, rates of every dimension, idempotency,
//! deadlines, circuit breakers, approvals, cancellation, audit and Redis apply to every
//! upstream tool exactly as they do in an app that adds the layer. Governance lives once, in
//! the layer; the gateway compiles and forwards.
//!
//! - Each upstream's operations are served under `/<upstream>` plus their path, tagged with
//!   the upstream's name, and named `<upstream>_<name>` (unless `prefix: false`): names are
//!   unique across upstreams and valid MCP and OpenAI function names.
//! - Policies (`match` by upstream, tool glob, tags, methods; `set` rates, timeouts,
//!   circuits, approval, idempotency, effects, a risk level, visibility by scope) are
//!   written into each tool's `x-halo-*` declarations, so the layer enforces them and the
//!   model reads them.
//! - Callers authenticate to the gateway; an upstream gets only the headers its
//!   configuration names. The caller's `Authorization`, cookies and the upstream's API-key
//!   parameters never reach it, and the upstream's own credential parameters are not tool
//!   inputs.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use halo_gateway::{Config, Gateway};
//!
//! let config = Config::from_text(
//!     r#"
//! listen: 127.0.0.1:8080
//! auth: { tokens: { "${OPS_TOKEN}": { caller: ops, scopes: [admin] } } }
//! approvals: { scope: admin }
//! upstreams:
//!   pets: { openapi: pets.json, base_url: "http://127.0.0.1:9000", headers: { X-Key: "${PETS_KEY}" } }
//! policies:
//!   - match: { upstream: "*" }
//!     set: { timeout: 5s, circuit: 5/30s/2 }
//!   - match: { upstream: pets, methods: [POST, DELETE] }
//!     set: { rate: 10/minute, risk: L2 }
//! "#,
//!     ".",
//! )?;
//! let gateway = Gateway::build(&config).await?;
//! let listener = tokio::net::TcpListener::bind(config.listen()).await?;
//! axum::serve(listener, gateway.router()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! YAML is read with [serde-saphyr](https://docs.rs/serde-saphyr): a YAML 1.2 reader that
//! forbids `unsafe`, is fuzzed, does not panic on malformed input and enforces budgets
//! (depth, nodes, aliases), so a hostile file is refused rather than expanded; serde_yaml is
//! archived and serde_yml has an unsoundness advisory. Globs are the `glob` crate's
//! (rust-lang). Calls are sent with reqwest (rustls), which the workspace already uses.

mod auth;
mod config;
mod error;
mod file;
mod forward;
mod gateway;
mod merge;
mod pin;
mod policy;
mod read;
mod references;
mod reload;
mod report;
mod upstream;

pub use self::config::Config;
pub use self::error::{ConfigError, Error};
pub use self::gateway::Gateway;
pub use self::pin::pin;
pub use self::reload::Reloading;
pub use self::report::{Finding, Report, UpstreamReport};
pub use self::upstream::mcp::PinChanges;

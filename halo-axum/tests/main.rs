//! halo-axum's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

#[cfg(all(feature = "jwt", feature = "mcp"))]
#[path = "../../tests/shared/books_api.rs"]
mod books_api;
mod common;

#[cfg(feature = "agents")]
mod agents;
mod approval;
mod approval_metrics;
#[cfg(feature = "redis")]
mod approval_redis;
mod approval_takeover;
#[cfg(feature = "webhook")]
mod approval_webhook;
mod approval_withdraw;
#[cfg(all(feature = "redis", feature = "prometheus"))]
mod breaker_redis;
mod cancel;
mod carry_over;
mod catalogs;
mod circuit;
mod corpus;
mod exclude;
mod execution;
mod governance;
mod http;
mod idempotency_limits;
#[cfg(feature = "introspection")]
mod introspection;
#[cfg(feature = "jwt")]
mod jwt;
#[cfg(all(feature = "jwt", feature = "mcp"))]
mod jwt_oidc;
#[cfg(feature = "jwt")]
mod jwt_verdicts;
mod lenient;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_tasks;
#[cfg(feature = "prometheus")]
mod metrics;
#[cfg(feature = "playground")]
mod playground;
mod rate_dimensions;
#[cfg(feature = "redis")]
mod redis;
mod schemas;
mod search;
mod templates;
mod transparency;
#[cfg(feature = "ws")]
mod websocket;

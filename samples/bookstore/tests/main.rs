//! bookstore's integration tests, one module per file, built as one binary: one link
//! instead of one per file, which keeps a clean build's `target/` and its time small.

mod support;

mod access;
mod admin_routes;
mod agent;
mod approval_webhook;
mod audit;
mod books;
mod catalogs;
mod cli;
mod commerce;
mod halo;
mod limits;
mod logging;
mod metrics;
mod oauth;
mod rate_dimensions;
mod redis;
mod replicas;
mod weather;

//! What the integration tests share: the pet shop API ([`petshop()`]), calling an app in
//! process ([`client`]), handlers the test holds or watches ([`gate`]), audit records kept
//! in memory ([`audit`]), the parts of a notes API that several tests serve ([`notes`]), the
//! payments API of the approval tests ([`approvals`]), the keys the JWT tests sign with
//! ([`jwt_keys`]) and an app served on a loopback port ([`served`]).
#![allow(dead_code, missing_docs, unreachable_pub, clippy::use_self)]

pub mod approvals;
pub mod audit;
pub mod client;
pub mod gate;
pub mod jwt_keys;
pub mod log;
pub mod notes;
mod petshop;
pub mod served;
#[cfg(feature = "ws")]
pub mod socket;

#[allow(unused_imports)] // not every test uses the pet shop
pub use petshop::*;

/// Moves Tokio's clock on by `by` at once, then lets it run again: for waits on the layer's
/// own clock (a key set's refresh interval) in tests that also use real sockets, where the
/// clock cannot stay paused. Needs the current-thread runtime of `#[tokio::test]`.
pub async fn fast_forward(by: std::time::Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// The process's one Prometheus recorder, installed by the first test that asks for it: every
/// app a test binary builds reports to it, as the apps of one process do.
#[cfg(feature = "prometheus")]
pub fn prometheus() -> halo_axum::Prometheus {
    use halo_axum::Prometheus;
    use std::sync::OnceLock;

    static PROMETHEUS: OnceLock<Prometheus> = OnceLock::new();
    PROMETHEUS
        .get_or_init(|| Prometheus::install().expect("the first recorder of this process"))
        .clone()
}

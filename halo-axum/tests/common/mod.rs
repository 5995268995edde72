//! What the integration tests share: the pet shop API ([`petshop()`]), calling an app in
//! process ([`client`]), handlers the test holds or watches ([`gate`]) and audit records kept
//! in memory ([`audit`]).
#![allow(dead_code, missing_docs, unreachable_pub, clippy::use_self)]

pub mod audit;
pub mod client;
pub mod gate;
mod petshop;

#[allow(unused_imports)] // not every test uses the pet shop
pub use petshop::*;

//! The handlers, one module per domain. Each handler is described by `#[utoipa::path]` (structure)
//! and `#[halo]` (what an agent needs beyond structure).

pub(crate) mod books;
pub(crate) mod inventory;
pub(crate) mod orders;
pub(crate) mod payments;
pub(crate) mod weather;

//! The HALO layer: [`HaloLayer`], the [`Halo`] service it produces and its
//! [`ResponseFuture`].

mod builder;
mod future;
#[allow(clippy::module_inception)]
mod layer;
mod service;

pub use self::builder::{Describe, HaloBuilder};
pub use self::future::ResponseFuture;
pub use self::layer::HaloLayer;
pub use self::service::Halo;

//! The HALO layer: [`HaloLayer`], the [`Halo`] service it produces and its
//! [`ResponseFuture`].

mod builder;
mod called;
mod cancel;
mod compile;
mod describe;
mod future;
pub(crate) mod held;
#[allow(clippy::module_inception)]
mod layer;
mod service;
mod shared;
#[cfg(any(feature = "redis", feature = "ws"))]
mod slot;
#[cfg(feature = "ws")]
mod websocket;

pub use self::builder::HaloBuilder;
pub use self::called::ToolCall;
pub use self::describe::Describe;
pub use self::future::ResponseFuture;
pub use self::layer::HaloLayer;
pub use self::service::Halo;
pub(crate) use self::shared::Shared;

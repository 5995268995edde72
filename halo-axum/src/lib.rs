#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod discovery;
mod error;
mod layer;
mod registry;

pub use halo_macros::halo;
pub use halo_protocol as protocol;

pub use crate::error::BuildError;
pub use crate::layer::{Describe, Halo, HaloBuilder, HaloLayer, ResponseFuture};

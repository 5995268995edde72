//! The registry the layer serves: halo-openapi's compiled document.

pub(crate) use halo_openapi::{Audience, Cached, Registry, Route, Tool, View};

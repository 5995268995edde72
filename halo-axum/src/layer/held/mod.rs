//! Calls held for approval, on the layer's path: the step that holds a call (`hold`), the
//! run of an approved one (`run`), reading and deciding as a caller (`decision`),
//! withdrawing by the caller (`withdraw`), running another replica's approved call whose
//! replica stopped (`takeover`), the HTTP endpoints (`endpoint`) and the builder's settings
//! (`builder`). The book they keep approvals in is halo-govern's, as `crate::approval`
//! names it for the layer.

mod builder;
pub(crate) mod decision;
mod endpoint;
#[cfg(feature = "redis")]
mod follow;
mod hold;
mod run;
#[cfg(feature = "redis")]
mod takeover;
mod withdraw;

pub(crate) use self::endpoint::{is_endpoint, serve};
pub(crate) use self::hold::{Held, hold};
#[cfg(feature = "redis")]
pub(crate) use self::takeover::is_takeover;
#[cfg(feature = "mcp")]
pub(crate) use self::withdraw::withdraw_as;
pub(crate) use self::withdraw::withdraw_stream;

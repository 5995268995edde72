//! A client for HALO APIs: point it at a base URL and it finds, understands and calls the
//! API's tools correctly and safely.
//!
//! - [`Client::discover`] reads the manifest (`OPTIONS /`, optionally filtered by tags).
//! - [`Client::describe`] reads one tool's schema, cached per path and revalidated with
//!   `If-None-Match`; [`Client::describe_all`] reads many concurrently.
//! - [`Client::invoke`] places each argument where the schema says (`in`: path, query,
//!   header, body), applies the credential of the request's own host ([`Credentials`]: a
//!   bearer token, an API key, basic, or an OAuth 2.0 client, [`ClientCredentials`], whose
//!   token endpoint is named or found from its issuer, and whose tokens are asked for the
//!   resource the API's protected resource metadata names), and retries only what is safe
//!   to repeat ([`RetryPolicy`]).
//! - [`Client::invoke_stream`] calls a tool for its events as they happen (Server-Sent
//!   Events): a [`ToolStream`] that resumes across dropped connections without running the
//!   tool again, and yields each event exactly once.
//! - A call of a tool that waits for approval (`202 Accepted`) waits for the decision and
//!   answers as the call does ([`Error::is_denied`] when denied); [`Client::approvals`],
//!   [`Client::approve`] and [`Client::deny`] decide, as an approver ([`Approval`]);
//!   [`Client::withdraw`] takes back a call of one's own before anyone decides it.
//! - [`Client::search`] finds the tools for a task (`OPTIONS /?q=`, or the client's own
//!   ranking over the manifest when the server does not search).
//! - [`export_tools`] and [`ExportOptions`] turn tools into OpenAI or Anthropic tool
//!   definitions, within each vendor's limits (OpenAI's 128 functions, tool search with
//!   `defer_loading`, strict mode via [`strict_schema`]).
//! - [`CircuitBreaker`]: a host whose calls keep failing is left alone for a while, and its
//!   calls fail at once with an error that says when it will be tried again
//!   ([`Error::is_unavailable`]).
//! - [`Error`] keeps a failed call's status and problem details for the model to read, and
//!   never carries a secret.
//! - [`agent`] (feature `agent`): an LLM agent that answers a task by calling an API's
//!   tools ([`agent::RemoteTools`]).
//! - [`rig`] (feature `rig`): an API's tools as rig tools for a rig agent
//!   ([`rig::RigTools`]), or `search_tools` and `call_tool` above a token budget.
//!
//! ```no_run
//! use halo_client::{Client, Method};
//! use serde_json::json;
//!
//! # async fn run() -> halo_client::Result<()> {
//! let client = Client::new("http://127.0.0.1:3000")?;
//! let weather = client
//!     .invoke("/api/weather", Method::GET, json!({"city": "Lisbon"}))
//!     .await?;
//! println!("{}", weather.to_value());
//! # Ok(()) }
//! ```

#[cfg(feature = "agent")]
#[cfg_attr(docsrs, doc(cfg(feature = "agent")))]
pub mod agent;
mod approval;
mod args;
mod breaker;
mod client;
mod credentials;
mod error;
mod event;
mod export;
#[cfg(any(feature = "agent", feature = "rig"))]
mod given;
mod oauth;
mod pin;
mod response;
mod retry;
#[cfg(feature = "rig")]
#[cfg_attr(docsrs, doc(cfg(feature = "rig")))]
pub mod rig;
mod search;
mod secret;
mod sse;
mod strict;
mod transport;

pub use halo_protocol as protocol;
pub use reqwest::header::HeaderName;
pub use reqwest::{Method, StatusCode};

pub use crate::approval::{Approval, ApprovalCall, ApprovalResponse, ApprovalState};
pub use crate::breaker::CircuitBreaker;
pub use crate::client::{CallId, CancelOutcome, Client, ClientBuilder, Discovered, ToolStream};
pub use crate::credentials::{Credential, Credentials};
pub use crate::error::{Error, Result};
pub use crate::event::StreamEvent;
pub use crate::export::{
    ANTHROPIC_MAX_DEFERRED, Defer, ExportError, ExportOptions, Exported, OPENAI_MAX_TOOLS,
    ToolFormat, export_tools,
};
pub use crate::oauth::ClientCredentials;
pub use crate::pin::{Pin, PinDiff, PinPolicy, PinnedTool};
pub use crate::response::{Body, ToolResponse};
pub use crate::retry::RetryPolicy;
pub use crate::search::{SearchResults, ToolSearch};
pub use crate::secret::Secret;
pub use crate::strict::strict_schema;
pub use crate::transport::{Transport, UnknownTransport};

/// The event-stream decoder, for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::sse::decode_chunks;
}

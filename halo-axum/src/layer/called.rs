//! [`ToolCall`]: the mark the layer leaves on a call of a described operation it let through.

use std::sync::Arc;

use super::Shared;

/// The described operation a request calls, in the request's extensions when the layer ran
/// its checks on the call and let it through to the application, and was asked to mark calls
/// ([`HaloBuilder::mark_calls`](crate::HaloBuilder::mark_calls)).
///
/// A service behind the layer can tell by it that the request is a call of one of the tools
/// the layer serves (and which), not a request the layer passed on untouched. The layer
/// runs its checks on every call of a described operation when it authenticates callers,
/// validates arguments, keeps an audit trail or counts metrics; without any of those, only
/// calls of governed tools (a rate, an idempotency key, a deadline, a circuit, an approval)
/// and streamed or named calls carry it. `halo gateway` validates every call, and forwards
/// only requests that carry it.
///
/// ```
/// use axum::{Extension, Router, routing::get};
/// use halo_axum::ToolCall;
///
/// async fn ping(call: Option<Extension<ToolCall>>) -> String {
///     match call {
///         Some(Extension(call)) => format!("called as the tool {}", call.name()),
///         None => "not through the layer's checks".to_owned(),
///     }
/// }
/// let app: Router = Router::new().route("/ping", get(ping));
/// // with the layer built by `HaloBuilder::...mark_calls(true)`
/// # let _ = app;
/// ```
// The name only, shared: a held call keeps its request (extensions included) in the layer's
// book, so a handle on the layer here would keep the layer alive for ever.
#[derive(Debug, Clone)]
pub struct ToolCall {
    name: Arc<str>,
}

impl ToolCall {
    /// The call of the tool at `tool` of the layer's registry.
    pub(crate) fn new(shared: &Shared, tool: usize) -> Self {
        Self {
            name: Arc::clone(&shared.tool_names[tool]),
        }
    }

    /// The tool's name, as discovery serves it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

//! [`ToolCall`]: the mark the layer leaves on a call of a described operation it let through.

use std::sync::Arc;

use super::Shared;

/// The described operation a request calls, in the request's extensions when the layer ran
/// its checks on the call and let it through to the application.
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
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct ToolCall {
    shared: Arc<Shared>,
    tool: usize,
}

impl ToolCall {
    pub(crate) fn new(shared: &Arc<Shared>, tool: usize) -> Self {
        Self {
            shared: Arc::clone(shared),
            tool,
        }
    }

    /// The tool's name, as discovery serves it.
    #[must_use]
    pub fn name(&self) -> &str {
        self.shared.discovery.registry.tool_at(self.tool).name()
    }
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ToolCall").field(&self.name()).finish()
    }
}

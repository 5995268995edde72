//! The MCP request a tool call came in: through rmcp, with its context, or answered directly
//! ([`direct`](super::direct)), with only its HTTP request.

use halo_protocol::Asking;
use http::request::Parts;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;

/// What a tool call needs of the MCP request it came in.
#[derive(Clone, Copy)]
pub(super) enum Asked<'a> {
    /// Through rmcp: its context holds the HTTP request, the progress token, the request's
    /// cancellation, the client's version and capabilities, and the way to notify it.
    Rmcp(&'a RequestContext<RoleServer>),
    /// Answered directly: a request with no `_meta` (so no progress token), whose client
    /// cannot be asked anything, and which is cancelled by its connection going away (the
    /// call's future is then dropped).
    Direct(&'a Parts),
}

impl<'a> Asked<'a> {
    /// The HTTP request the MCP request came in, when the transport kept it.
    pub(super) fn caller(self) -> Option<&'a Parts> {
        match self {
            Self::Rmcp(context) => context.extensions.get::<Parts>(),
            Self::Direct(parts) => Some(parts),
        }
    }

    /// The token the client asked progress notifications for.
    pub(super) fn progress_token(self) -> Option<ProgressToken> {
        match self {
            Self::Rmcp(context) => context.meta.get_progress_token(),
            Self::Direct(_) => None,
        }
    }

    /// Ends when the client cancels the request; never for a direct one.
    pub(super) async fn cancelled(self) {
        match self {
            Self::Rmcp(context) => context.ct.cancelled().await,
            Self::Direct(_) => std::future::pending().await,
        }
    }

    /// Whether the client can be asked to confirm a call (an `input_required` result).
    pub(super) fn can_ask(self) -> bool {
        match self {
            Self::Rmcp(context) => {
                let version = context.protocol_version();
                let capabilities = context.client_capabilities();
                Asking::of(version.as_ref(), capabilities.as_ref()) == Some(Asking::Result)
            }
            Self::Direct(_) => false,
        }
    }

    /// Whether the client declared the Tasks extension (`io.modelcontextprotocol/tasks`): a
    /// call held for approval, or a long streamed one, then answers with a task.
    pub(super) fn wants_tasks(self) -> bool {
        match self {
            Self::Rmcp(context) => context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.supports_tasks()),
            Self::Direct(_) => false,
        }
    }

    /// Sends the client a progress notification (one that stopped listening still gets
    /// the result).
    pub(super) async fn notify_progress(self, note: ProgressNotificationParam) {
        if let Self::Rmcp(context) = self {
            let _ = context.peer.notify_progress(note).await;
        }
    }
}

//! What every service of one layer shares: the described operations and their discovery, the
//! gate callers pass, and the state of checks, governance, streams, audit and metrics.

use axum::response::Response;

use crate::approval::Book;
use crate::audit::AuditSink;
use crate::auth::Gate;
use crate::discovery::Discovery;
use crate::govern::Governance;
use crate::metrics::Metrics;
use crate::stream::Calls;

/// Everything a layer shares between its services.
pub(crate) struct Shared {
    pub(crate) discovery: Discovery,
    pub(crate) gate: Gate,
    /// Whether calls are checked against their input schemas.
    pub(crate) validate: bool,
    pub(crate) body_limit: usize,
    pub(crate) calls: Calls,
    pub(crate) governance: Governance,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    /// Whether audit records carry the (redacted) arguments.
    pub(crate) audit_arguments: bool,
    /// Counts and times calls and discovery, when on.
    pub(crate) metrics: Option<Metrics>,
    /// Calls held for approval, and who decides them.
    pub(crate) approvals: Book,
    /// Whether calls the layer lets through carry a `ToolCall` (`HaloBuilder::mark_calls`).
    pub(crate) mark_calls: bool,
    /// Each tool's name, shared with the calls that name it (`ToolCall`).
    pub(crate) tool_names: Box<[std::sync::Arc<str>]>,
    /// The app that runs approved calls whose holder stopped, when the layer was given one
    /// (`HaloLayer::take_over_with`).
    #[cfg(feature = "redis")]
    pub(crate) takeover: super::slot::Slot,
    /// The app that WebSocket calls are sent into, when the layer was given one
    /// (`HaloLayer::websocket_app`: a layer applied route by route cannot reach the handler
    /// of another method on its own).
    #[cfg(feature = "ws")]
    pub(crate) socket_app: super::slot::Slot,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("discovery", &self.discovery)
            .field("gate", &self.gate)
            .field("validate", &self.validate)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Whether every call of a described operation needs the layer: checks are on, or the
    /// caller asks for a stream. Otherwise only governed tools do.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn checks(&self, streaming: bool) -> bool {
        self.gate.is_closed()
            || self.validate
            || self.audit.is_some()
            || self.metrics.is_some()
            || streaming
    }

    /// The index of the tool `entry` was asked for: the one it was booked with, unless the
    /// layer was built again since ([`carry_over`](crate::HaloBuilder::carry_over)) and the
    /// tool moved, or went (`None`).
    pub(crate) fn approval_tool(&self, entry: &crate::approval::Entry) -> Option<usize> {
        let name = entry.request.tool();
        match self.tool_names.get(entry.tool) {
            Some(booked) if **booked == *name => Some(entry.tool),
            _ => self.tool_names.iter().position(|tool| **tool == *name),
        }
    }

    /// Counts a discovery request, when metrics are on.
    pub(crate) fn discovered(&self, uri: &http::Uri, response: &Response) {
        if let Some(metrics) = &self.metrics {
            metrics.discovery(uri.path(), response.status());
        }
    }
}

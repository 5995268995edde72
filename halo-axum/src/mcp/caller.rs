//! Who sent an MCP request, as the layer's gate identified it before MCP saw the request.

use crate::Principal;

/// The caller of an MCP request, identified once by [`McpService`](super::McpService) and
/// kept in the request's extensions (which nothing outside the process can set), so that
/// each tool the request calls is checked against it in process rather than by a discovery
/// request of its own.
#[derive(Debug, Clone)]
pub(super) struct Identified(pub(super) Option<Principal>);

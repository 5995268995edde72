//! What several of these test files share: calling a tool through an MCP client.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

/// Calls the tool `name` with `args` (a JSON object) through `client`.
///
/// # Panics
/// When `args` is not an object or the call fails (an error result is an answer, not a
/// failure).
pub(crate) async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("calling {name}: {e}"))
}

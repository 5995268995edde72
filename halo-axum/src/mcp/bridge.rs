//! The MCP server behind `/mcp`: discovery and calls dispatched in process through the app
//! wrapped by its HALO layer ([`Local`]), with the MCP request's credentials.

use std::sync::Arc;

use halo_protocol::{Manifest, ToolDefinition, ToolOutput, tool_definitions, tool_names};
use http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::local::{Failure, Local};

/// One MCP server per request (the transport is stateless), sharing the app.
#[derive(Clone)]
pub(super) struct Bridge {
    shared: Arc<Shared>,
}

struct Shared {
    /// The app's tools, in process.
    local: Local,
    info: ServerConfig,
}

impl Bridge {
    pub(super) fn new(local: Local, instructions: Option<String>) -> Self {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("halo-axum", env!("CARGO_PKG_VERSION")));
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        Self {
            shared: Arc::new(Shared { local, info }),
        }
    }
}

/// The HTTP request an MCP request came in, when the transport kept it.
fn caller(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
}

/// A discovery failure as a protocol error: the MCP client sees why it got no tools.
fn protocol_error(failure: Failure) -> ErrorData {
    match failure {
        Failure::Answered(output) => ErrorData::internal_error(
            format!("discovery was refused: {}", output.text),
            output.structured,
        ),
        Failure::Other(message) => ErrorData::internal_error(message, None),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .local
            .tools(caller(&context), |_| true)
            .await
            .map_err(protocol_error)?;
        Ok(ListToolsResult::with_all_items(
            tool_definitions(&tools).iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context);
        // Names come from the manifest alone; only the called tool is described.
        let local = &self.shared.local;
        let manifest: Manifest = local.discover(caller, "/").await.map_err(protocol_error)?;
        let entry = tool_names(&manifest.tools)
            .into_iter()
            .zip(&manifest.tools)
            .find(|(name, _)| *name == request.name)
            .map(|(_, entry)| entry)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("no tool is named `{}`", request.name), None)
            })?;
        let schema = match local.schema(caller, entry, &mut Vec::new()).await {
            Ok(schema) => schema,
            Err(Failure::Answered(output)) => return Ok(tool_result(output).into()),
            Err(failure) => return Err(protocol_error(failure)),
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        Ok(tool_result(local.call(caller, &schema, args).await).into())
    }
}

/// An output as an MCP tool result.
fn tool_result(output: ToolOutput) -> CallToolResult {
    let content = vec![ContentBlock::text(output.text)];
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = output.structured;
    result
}

/// A tool definition as an MCP tool.
fn mcp_tool(definition: &ToolDefinition) -> Tool {
    let hints = definition.hints;
    let mut annotations = ToolAnnotations::new()
        .read_only(hints.read_only)
        .idempotent(hints.idempotent);
    if let Some(destructive) = hints.destructive {
        annotations = annotations.destructive(destructive);
    }
    annotations.title.clone_from(&definition.title);
    let mut tool = Tool::new(
        definition.name.clone(),
        definition.description.clone(),
        Arc::new(definition.input_schema.clone()),
    )
    .with_annotations(annotations);
    if definition.description.is_empty() {
        tool.description = None;
    }
    if let Some(title) = &definition.title {
        tool = tool.with_title(title);
    }
    if let Some(output) = &definition.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(output.clone()));
    }
    tool
}

//! The MCP server behind `/mcp`: discovery and calls dispatched in process through the app
//! wrapped by its HALO layer, with the MCP request's credentials.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use halo_protocol::{
    MEDIA_TYPE, Manifest, Payload, ToolDefinition, ToolEntry, ToolOutput, ToolSchema, entry_schema,
    place_arguments, tool_definitions, tool_names,
};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tower_service::Service as _;

/// Characters escaped in a query name or value: all but RFC 3986 unreserved.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The largest discovery answer read (a manifest or a path's schemas).
const MAX_DISCOVERY_BYTES: usize = 16 * 1024 * 1024;

/// One MCP server per request (the transport is stateless), sharing the app.
#[derive(Clone)]
pub(super) struct Bridge {
    shared: Arc<Shared>,
}

struct Shared {
    /// The app wrapped by its HALO layer.
    app: Router,
    /// The headers of the MCP request passed on.
    forward: Vec<HeaderName>,
    info: ServerConfig,
    max_response_bytes: usize,
}

/// What went wrong while reading the app's answer.
enum Failure {
    /// The app answered with an error status: its body, as a tool output.
    Answered(ToolOutput),
    /// Something else, for a protocol error or an error result.
    Other(String),
}

impl Bridge {
    pub(super) fn new(
        app: Router,
        forward: Vec<HeaderName>,
        instructions: Option<String>,
        max_response_bytes: usize,
    ) -> Self {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("halo-axum", env!("CARGO_PKG_VERSION")));
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        Self {
            shared: Arc::new(Shared {
                app,
                forward,
                info,
                max_response_bytes,
            }),
        }
    }

    /// A request to the app carrying the MCP request's credentials (and client address);
    /// `target` must be a path of the app (with its query).
    fn request(
        &self,
        caller: Option<&Parts>,
        method: Method,
        target: &str,
    ) -> Result<Request<Body>, String> {
        let uri = http::Uri::try_from(target)
            .ok()
            .filter(|uri| target.starts_with('/') && uri.authority().is_none())
            .ok_or_else(|| format!("`{target}` is not a path of this app"))?;
        let mut request = Request::new(Body::empty());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        if let Some(caller) = caller {
            let headers = request.headers_mut();
            for name in &self.shared.forward {
                for value in caller.headers.get_all(name) {
                    headers.append(name.clone(), value.clone());
                }
            }
            if let Some(address) = caller.extensions.get::<ConnectInfo<SocketAddr>>() {
                request.extensions_mut().insert(*address);
            }
        }
        Ok(request)
    }

    /// Sends a request through the app and reads the answer: status, headers, body.
    async fn send(
        &self,
        request: Request<Body>,
        limit: usize,
    ) -> Result<(StatusCode, HeaderMap, Value), String> {
        let mut app = self.shared.app.clone();
        let Ok(response) = app.call(request).await;
        let (parts, body) = response.into_parts();
        let bytes = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|e| format!("the answer could not be read: {e}"))?
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else if parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(halo_protocol::is_json)
        {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        } else {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        };
        Ok((parts.status, parts.headers, body))
    }

    /// A HALO discovery answer (`OPTIONS` with the HALO media type) as `T`.
    async fn discover<T: serde::de::DeserializeOwned>(
        &self,
        caller: Option<&Parts>,
        path: &str,
    ) -> Result<T, Failure> {
        let mut request = self
            .request(caller, Method::OPTIONS, path)
            .map_err(Failure::Other)?;
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
        let (status, _, body) = self
            .send(request, MAX_DISCOVERY_BYTES)
            .await
            .map_err(Failure::Other)?;
        if !status.is_success() {
            return Err(Failure::Answered(ToolOutput::from_response(
                status.as_u16(),
                body,
            )));
        }
        serde_json::from_value(body).map_err(|e| {
            Failure::Other(format!(
                "OPTIONS {path} did not answer HALO (is the app wrapped by its HaloLayer?): {e}"
            ))
        })
    }

    /// The caller's tools: the manifest it may see and each tool's schema.
    async fn tools(&self, caller: Option<&Parts>) -> Result<Vec<(ToolEntry, ToolSchema)>, Failure> {
        let manifest: Manifest = self.discover(caller, "/").await?;
        let mut tools = Vec::with_capacity(manifest.tools.len());
        let mut described: Vec<(String, Vec<ToolSchema>)> = Vec::new();
        for entry in manifest.tools {
            let schema = self.schema(caller, &entry, &mut described).await?;
            tools.push((entry, schema));
        }
        Ok(tools)
    }

    /// The schema of one manifest entry, fetching its path's schemas once.
    async fn schema(
        &self,
        caller: Option<&Parts>,
        entry: &ToolEntry,
        described: &mut Vec<(String, Vec<ToolSchema>)>,
    ) -> Result<ToolSchema, Failure> {
        if entry.url == "/" || !entry.url.starts_with('/') {
            return Ok(entry_schema(entry));
        }
        let index = match described.iter().position(|(path, _)| *path == entry.url) {
            Some(index) => index,
            None => {
                let schemas = self.discover(caller, &entry.url).await?;
                described.push((entry.url.clone(), schemas));
                described.len() - 1
            }
        };
        described[index]
            .1
            .iter()
            .find(|schema| schema.call.method.eq_ignore_ascii_case(&entry.method))
            .cloned()
            .ok_or_else(|| {
                Failure::Other(format!(
                    "OPTIONS {} does not describe {}",
                    entry.url, entry.method
                ))
            })
    }

    /// Calls a tool in process and reads its answer.
    async fn call(&self, caller: Option<&Parts>, schema: &ToolSchema, args: Value) -> ToolOutput {
        let Ok(method) = Method::from_bytes(schema.call.method.as_bytes()) else {
            return ToolOutput::failure("the tool's method is not an HTTP method");
        };
        let placed = match place_arguments(&schema.call.url, method.as_str(), Some(schema), args) {
            Ok(placed) => placed,
            Err(error) => return ToolOutput::failure(format!("invalid arguments: {error}")),
        };
        let mut target = placed.target;
        for (i, (name, value)) in placed.query.iter().enumerate() {
            target.push(if i == 0 { '?' } else { '&' });
            target.extend(utf8_percent_encode(name, QUERY));
            target.push('=');
            target.extend(utf8_percent_encode(value, QUERY));
        }
        let mut request = match self.request(caller, method, &target) {
            Ok(request) => request,
            Err(message) => return ToolOutput::failure(message),
        };
        let headers = request.headers_mut();
        for (name, value) in placed.headers {
            // `place_arguments` vouches for both.
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value),
            ) {
                headers.insert(name, value);
            }
        }
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        match placed.body {
            Some(Payload::Json(value)) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                *request.body_mut() = Body::from(value.to_string());
            }
            Some(Payload::Raw {
                content_type,
                bytes,
            }) => {
                if let Ok(value) = HeaderValue::try_from(content_type) {
                    headers.insert(CONTENT_TYPE, value);
                }
                *request.body_mut() = Body::from(bytes);
            }
            None => {}
        }
        match self.send(request, self.shared.max_response_bytes).await {
            Ok((status, _, body)) => ToolOutput::from_response(status.as_u16(), body),
            Err(message) => ToolOutput::failure(message),
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
        let tools = self.tools(caller(&context)).await.map_err(protocol_error)?;
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
        let manifest: Manifest = self.discover(caller, "/").await.map_err(protocol_error)?;
        let entry = tool_names(&manifest.tools)
            .into_iter()
            .zip(&manifest.tools)
            .find(|(name, _)| *name == request.name)
            .map(|(_, entry)| entry)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("no tool is named `{}`", request.name), None)
            })?;
        let schema = match self.schema(caller, entry, &mut Vec::new()).await {
            Ok(schema) => schema,
            Err(Failure::Answered(output)) => return Ok(tool_result(output).into()),
            Err(failure) => return Err(protocol_error(failure)),
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        Ok(tool_result(self.call(caller, &schema, args).await).into())
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

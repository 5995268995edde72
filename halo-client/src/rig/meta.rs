//! `search_tools` and `call_tool` as rig tools: what a model is given instead of an API's
//! tools when they cost more than the budget. Their arguments, answers and problems are
//! halo-protocol's, as every other channel's (halo-agent's loop, the MCP bridges).

use std::sync::Arc;

use halo_protocol::{
    CallRequest, Problem, SearchRequest, ToolDefinition, call_tool_definition,
    search_tools_definition, search_tools_reply, unknown_tool,
};
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::Value;

use super::RigTools;
use super::outcome::problem;
use super::tools::Inner;

/// What `search_tools` says of itself to a rig model: the tools it finds are called through
/// `call_tool` (a rig agent's tools are fixed for its run, so the found ones are not added).
const SEARCH_DESCRIPTION: &str = "Find this API's tools for a task. Answers the best matches \
with their names, descriptions and input schemas; call one with call_tool.";

impl RigTools {
    /// `search_tools` and `call_tool`, whatever the tools cost: a search of the API's tools
    /// (in process, by their tags, paths, `why` and parameters), and a call of one by name.
    #[must_use]
    pub fn search_and_call(&self) -> Vec<DynamicTool> {
        let mut search = search_tools_definition();
        search.description = SEARCH_DESCRIPTION.to_owned();
        let searching = Arc::clone(self.inner());
        let calling = Arc::clone(self.inner());
        [
            meta_tool(&search, move |arguments| {
                let inner = Arc::clone(&searching);
                Box::pin(async move { inner.search(&arguments) })
            }),
            meta_tool(&call_tool_definition(), move |arguments| {
                let inner = Arc::clone(&calling);
                Box::pin(async move { inner.call_by_name(&arguments).await })
            }),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

type Answer = Result<ToolOutput, ToolExecutionError>;

fn meta_tool<F>(definition: &ToolDefinition, callback: F) -> Option<DynamicTool>
where
    F: Fn(Value) -> rig_core::wasm_compat::WasmBoxedFuture<'static, Answer> + Send + Sync + 'static,
{
    Some(DynamicTool::new(
        ToolName::new(definition.name.as_str()).ok()?,
        definition.description.as_str(),
        Value::Object(definition.input_schema.clone()),
        callback,
    ))
}

impl Inner {
    /// A `search_tools` call: the best matches with their input schemas.
    fn search(&self, arguments: &Value) -> Answer {
        let request = SearchRequest::from_arguments(arguments).map_err(bad_arguments)?;
        let (found, more) = self.catalog.search(&request);
        Ok(ToolOutput::json(search_tools_reply(&found, more, false)))
    }

    /// A `call_tool` call: the tool it names, with its arguments (none: an empty object).
    async fn call_by_name(&self, arguments: &Value) -> Answer {
        let call = CallRequest::from_arguments(arguments).map_err(bad_arguments)?;
        // An API's own tool named like a meta-tool is reached here too: by its name.
        let Some((index, _)) = self.catalog.get(&call.name) else {
            let close = self.catalog.close_names(&call.name);
            return Err(problem(
                ToolErrorKind::NotFound,
                unknown_tool(&call.name, &close),
            ));
        };
        let arguments = match call.arguments {
            Value::Null => Value::Object(serde_json::Map::new()),
            arguments => arguments,
        };
        self.call(index, arguments).await
    }
}

/// A `400` for arguments the model got wrong.
fn bad_arguments(detail: String) -> ToolExecutionError {
    problem(
        ToolErrorKind::InvalidArgs,
        Problem::new(400).with_detail(detail),
    )
}

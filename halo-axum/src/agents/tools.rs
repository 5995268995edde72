//! A hosted agent's tools for one run: the app's operations the caller may see and the agent
//! may use, called in process as the caller.

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use halo_agent::ToolSet;
use halo_protocol::{Problem, ToolCatalog, ToolDefinition, ToolKind, ToolOutput, ToolSchema};
use http::request::Parts;
use serde_json::{Map, Value};

use super::HostedAgent;
use crate::local::{Failure, Local};

/// The tools of one run: only those the caller may see, so that a search
/// (`search_tools`, when they cost the model more than the agent's tool budget) never
/// finds another.
pub(super) struct LocalTools {
    local: Local,
    /// The run's request, whose credentials go with every call.
    caller: Parts,
    /// The definitions, and their search index (tags, paths, `why`, parameters).
    catalog: ToolCatalog,
    /// The schema of each definition, at the same index.
    schemas: Vec<ToolSchema>,
}

impl LocalTools {
    /// Discovers, as the caller, the tools `agent` may use (never an agent).
    pub(super) async fn for_caller(
        local: &Local,
        agent: &HostedAgent,
        caller: Parts,
    ) -> Result<Self, Problem> {
        let keep = |entry: &halo_protocol::ToolEntry| {
            entry.kind != Some(ToolKind::Agent) && agent.allows(&entry.name, &entry.tags)
        };
        let tools = match local.tools(Some(&caller), keep).await {
            Ok(tools) => tools,
            Err(Failure::Answered(output)) => {
                return Err(Problem::new(503).with_detail(format!(
                    "the agent's tools could not be listed: {}",
                    output.text
                )));
            }
            Err(Failure::Other(message)) => {
                return Err(Problem::new(500)
                    .with_detail(format!("the agent's tools could not be listed: {message}")));
            }
            // The manifest listed only what the caller sees; its paths must describe them.
            Err(Failure::Hidden) => {
                return Err(Problem::new(500).with_detail(
                    "the agent's tools could not be listed: a listed tool was not described",
                ));
            }
        };
        Ok(Self {
            local: local.clone(),
            caller,
            catalog: ToolCatalog::new(&tools),
            schemas: tools.into_iter().map(|(_, schema)| schema).collect(),
        })
    }

    /// The request the run came in.
    pub(super) fn caller(&self) -> &Parts {
        &self.caller
    }
}

impl ToolSet for LocalTools {
    fn definitions(&self) -> &[ToolDefinition] {
        self.catalog.definitions()
    }

    fn catalog(&self) -> Option<&ToolCatalog> {
        Some(&self.catalog)
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        async move {
            let Some((index, _)) = self.catalog.get(name) else {
                return ToolOutput::problem(
                    Problem::new(404).with_detail(format!("there is no tool named `{name}`")),
                );
            };
            self.local
                .call(
                    Some(&self.caller),
                    &self.schemas[index],
                    Value::Object(arguments),
                )
                .await
        }
        .boxed()
    }
}

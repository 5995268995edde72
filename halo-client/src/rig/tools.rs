//! [`RigTools`]: a HALO API's tools as rig `DynamicTool`s, called through a [`Client`].

use std::fmt;
use std::sync::Arc;

use halo_protocol::{ToolCatalog, ToolDefinition, ToolSchema, listed_tokens};
use rig_core::message::ToolName;
use rig_core::tool::DynamicTool;
use serde_json::Value;

use super::RigToolsBuilder;
use super::outcome::answer;
use crate::Client;

/// What a model is given of an API's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offer {
    /// Every tool, each a `DynamicTool` of its own: they fit the budget, or there is none.
    EveryTool,
    /// `search_tools` and `call_tool` in their stead: the tools cost more than the budget.
    SearchAndCall,
}

/// The tools of one HALO API as rig tools, called through a [`Client`] (see the
/// [module](super)).
///
/// Made by [`RigTools::builder`] (or [`RigTools::discover`]): the manifest and every tool's
/// schema are read once. Agents the API hosts (`"kind": "agent"`) are left out: an agent
/// does not call another. Cheap to clone; the tools it makes share it.
#[derive(Clone)]
pub struct RigTools {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) client: Client,
    /// The definitions, and their search index.
    pub(super) catalog: ToolCatalog,
    /// The schema of each definition, at the same index.
    pub(super) schemas: Vec<ToolSchema>,
    /// What listing every definition costs, in estimated tokens.
    tokens: usize,
    /// Above it, the model searches: none, every tool whatever it costs.
    budget: Option<usize>,
}

impl RigTools {
    /// A builder of the tools of the API `client` talks to.
    pub fn builder(client: &Client) -> RigToolsBuilder {
        RigToolsBuilder::new(client)
    }

    /// The tools of the API `client` talks to, those with any of `tags` (all of them when
    /// `tags` is empty), with the default budget: the builder's
    /// [`discover`](RigToolsBuilder::discover) in one call.
    ///
    /// # Errors
    /// As [`Client::discover`] and [`Client::describe_all`].
    pub async fn discover(client: &Client, tags: &[&str]) -> crate::Result<Self> {
        Self::builder(client)
            .tags(tags.iter().copied())
            .discover()
            .await
    }

    pub(super) fn new(
        client: Client,
        catalog: ToolCatalog,
        schemas: Vec<ToolSchema>,
        budget: Option<usize>,
    ) -> Self {
        let tokens = listed_tokens(catalog.definitions());
        Self {
            inner: Arc::new(Inner {
                client,
                catalog,
                schemas,
                tokens,
                budget,
            }),
        }
    }

    pub(super) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// The client the tools are called through.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Every tool's definition, as [`export_tools`](crate::export_tools) makes them: the
    /// names the model calls them by.
    #[must_use]
    pub fn definitions(&self) -> &[ToolDefinition] {
        self.inner.catalog.definitions()
    }

    /// What listing every tool costs a model as function tools, in estimated tokens
    /// ([`listed_tokens`](halo_protocol::listed_tokens)): what the budget is compared with.
    #[must_use]
    pub fn listed_tokens(&self) -> usize {
        self.inner.tokens
    }

    /// Whether the model is given every tool or the two that search and call them.
    #[must_use]
    pub fn offer(&self) -> Offer {
        match self.inner.budget {
            Some(budget) if self.inner.tokens > budget => Offer::SearchAndCall,
            _ => Offer::EveryTool,
        }
    }

    /// The tools to give a rig agent, as [`offer`](Self::offer) says: every tool, or
    /// `search_tools` and `call_tool`.
    #[must_use]
    pub fn tools(&self) -> Vec<DynamicTool> {
        match self.offer() {
            Offer::EveryTool => self.every_tool(),
            Offer::SearchAndCall => self.search_and_call(),
        }
    }

    /// Every tool, each a `DynamicTool`, whatever they cost.
    #[must_use]
    pub fn every_tool(&self) -> Vec<DynamicTool> {
        self.definitions()
            .iter()
            .enumerate()
            .filter_map(|(index, definition)| self.tool(index, definition))
            .collect()
    }

    /// The tool at `index`: its definition, and a call of its schema.
    fn tool(&self, index: usize, definition: &ToolDefinition) -> Option<DynamicTool> {
        let name = ToolName::new(definition.name.as_str()).ok()?;
        let inner = Arc::clone(&self.inner);
        Some(DynamicTool::new(
            name,
            definition.description.as_str(),
            Value::Object(definition.input_schema.clone()),
            move |arguments| {
                let inner = Arc::clone(&inner);
                Box::pin(async move { inner.call(index, arguments).await })
            },
        ))
    }
}

impl Inner {
    /// Calls the tool at `index` (of the definitions) with `arguments`.
    pub(super) async fn call(
        &self,
        index: usize,
        arguments: Value,
    ) -> Result<rig_core::tool::ToolOutput, rig_core::tool::ToolExecutionError> {
        let Some(schema) = self.schemas.get(index) else {
            return Err(super::outcome::problem(
                rig_core::tool::ToolErrorKind::NotFound,
                halo_protocol::Problem::new(404),
            ));
        };
        answer(self.client.call(schema, arguments).await)
    }
}

impl fmt::Debug for RigTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .definitions()
            .iter()
            .map(|definition| definition.name.as_str())
            .collect();
        f.debug_struct("RigTools")
            .field("client", &self.inner.client)
            .field("tools", &names)
            .field("listed_tokens", &self.inner.tokens)
            .field("budget", &self.inner.budget)
            .field("offer", &self.offer())
            .finish()
    }
}

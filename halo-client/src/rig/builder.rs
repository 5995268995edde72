//! [`RigToolsBuilder`]: which tools of an API, and the budget above which the model
//! searches them.

use halo_protocol::{DEFAULT_TOOL_BUDGET, ToolEntry, ToolSchema};

use super::RigTools;
use crate::Client;

/// Builds [`RigTools`]: the tags of the tools to give (all of them by default) and the
/// token budget above which the model is given `search_tools` and `call_tool` instead
/// ([`DEFAULT_TOOL_BUDGET`], 4,000 estimated tokens, by default).
///
/// ```no_run
/// use halo_client::Client;
/// use halo_client::rig::{Offer, RigTools};
///
/// # async fn run(client: Client) -> halo_client::Result<()> {
/// // A model with a large context: every tool, whatever they cost.
/// let tools = RigTools::builder(&client).all_tools().discover().await?;
/// assert_eq!(tools.offer(), Offer::EveryTool);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct RigToolsBuilder {
    client: Client,
    tags: Vec<String>,
    budget: Option<usize>,
}

impl RigToolsBuilder {
    pub(super) fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            tags: Vec::new(),
            budget: Some(DEFAULT_TOOL_BUDGET),
        }
    }

    /// Only the tools with any of these tags (discovery's `?tags=`); all of them when none
    /// is given.
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The most estimated tokens of tool definitions a model is given up front: tools that
    /// cost more are offered as `search_tools` and `call_tool`.
    pub fn tool_budget(mut self, tokens: usize) -> Self {
        self.budget = Some(tokens);
        self
    }

    /// Gives the model every tool, whatever they cost: no budget, no search.
    pub fn all_tools(mut self) -> Self {
        self.budget = None;
        self
    }

    /// Reads the manifest (with the tags) and every tool's schema.
    ///
    /// # Errors
    /// As [`Client::discover`] and [`Client::describe_all`].
    pub async fn discover(self) -> crate::Result<RigTools> {
        let tags: Vec<&str> = self.tags.iter().map(String::as_str).collect();
        let tools = crate::given::discover(&self.client, &tags).await?;
        Ok(self.build(tools))
    }

    /// These tools (manifest entries with their schemas, from [`Client::discover`] and
    /// [`Client::describe_all`], chosen as you like), without reading anything; the tags are
    /// not applied. Agents (`"kind": "agent"`) are left out.
    #[must_use]
    pub fn build(self, tools: Vec<(ToolEntry, ToolSchema)>) -> RigTools {
        let (catalog, schemas) = crate::given::callable(tools);
        RigTools::new(self.client, catalog, schemas, self.budget)
    }
}

//! [`RemoteTools`]: a HALO API's tools, called over HTTP by a [`Client`].

use std::fmt;
use std::sync::Arc;

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use halo_agent::ToolSet;
use halo_protocol::{Problem, ToolCatalog, ToolDefinition, ToolEntry, ToolOutput, ToolSchema};
use serde_json::{Map, Value};

use crate::{Client, Result};

/// The tools of one HALO API as an agent's [`ToolSet`], called through a [`Client`].
///
/// [`discover`](Self::discover) reads the manifest (optionally only the tools with some
/// tags) and every tool's schema once; the model gets each tool as a function definition
/// (a name valid for LLM APIs, `why` then `description`, and the inputs as one JSON
/// Schema object). Agents the API hosts (`"kind": "agent"`) are left out: an agent does not
/// call another.
///
/// The tools are kept as a [`ToolCatalog`] too, so that an agent whose tools cost more than
/// its [`tool_budget`](halo_agent::AgentBuilder::tool_budget) searches them by their tags,
/// paths, `why` and parameters (`search_tools`), in process, whether the API searches or
/// not.
///
/// A call goes through [`Client::call`]: arguments placed where the schema says, the
/// credentials of the API's host, retries only where repeating is safe. Its answer is what
/// the model reads: the JSON (or text) of a success, the problem details of a `4xx` or
/// `5xx`, a `400` problem for arguments that cannot be placed, the client's message when
/// the API cannot be reached (which never holds a credential), and one line when the
/// client's [`CircuitBreaker`](crate::CircuitBreaker) has stopped calling it for a while:
/// `the API at https://api.example.com is unavailable (its last 5 calls failed); try again
/// in 30 s`.
///
/// Cheap to clone.
#[derive(Clone)]
pub struct RemoteTools {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// The definitions, and their search index.
    catalog: ToolCatalog,
    /// The schema of each definition, at the same index.
    schemas: Vec<ToolSchema>,
}

impl RemoteTools {
    /// The tools of the API `client` talks to, those with any of `tags` (all of them when
    /// `tags` is empty), as the client's credentials may see them.
    ///
    /// # Errors
    /// As [`Client::discover`] and [`Client::describe_all`].
    pub async fn discover(client: &Client, tags: &[&str]) -> Result<Self> {
        let tools = crate::given::discover(client, tags).await?;
        Ok(Self::from_tools(client, tools))
    }

    /// These tools (manifest entries with their schemas, from [`Client::discover`] and
    /// [`Client::describe_all`], filtered as you like), called through `client`. Agents
    /// (`"kind": "agent"`) are left out.
    #[must_use]
    pub fn from_tools(client: &Client, tools: Vec<(ToolEntry, ToolSchema)>) -> Self {
        let (catalog, schemas) = crate::given::callable(tools);
        Self {
            inner: Arc::new(Inner {
                client: client.clone(),
                catalog,
                schemas,
            }),
        }
    }

    /// The client the tools are called through.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Calls the tool `name` and gives its answer as the model reads it.
    async fn invoke(&self, name: &str, arguments: Map<String, Value>) -> ToolOutput {
        let Some((index, _)) = self.inner.catalog.get(name) else {
            return ToolOutput::problem(
                Problem::new(404).with_detail(format!("there is no tool named `{name}`")),
            );
        };
        let schema = &self.inner.schemas[index];
        match self
            .inner
            .client
            .call(schema, Value::Object(arguments))
            .await
        {
            Ok(response) => ToolOutput::from(&response),
            Err(error) => ToolOutput::from(&error),
        }
    }
}

impl ToolSet for RemoteTools {
    fn definitions(&self) -> &[ToolDefinition] {
        self.inner.catalog.definitions()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        self.invoke(name, arguments).boxed()
    }

    fn catalog(&self) -> Option<&ToolCatalog> {
        Some(&self.inner.catalog)
    }
}

impl fmt::Debug for RemoteTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .inner
            .catalog
            .definitions()
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        f.debug_struct("RemoteTools")
            .field("client", &self.inner.client)
            .field("tools", &names)
            .finish()
    }
}

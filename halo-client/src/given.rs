//! The tools of an API that an agent framework is given (features `agent` and `rig`): read
//! from the API, agents (`"kind": "agent"`) left out, each definition beside its schema.

use halo_protocol::{ToolCatalog, ToolEntry, ToolKind, ToolSchema};

use crate::{Client, Result};

/// The tools of the API `client` talks to with any of `tags` (all when empty): the manifest
/// entries and their schemas.
pub(crate) async fn discover(
    client: &Client,
    tags: &[&str],
) -> Result<Vec<(ToolEntry, ToolSchema)>> {
    let manifest = client.discover(tags).await?;
    let schemas = client.describe_all(&manifest.tools).await?;
    Ok(manifest.tools.into_iter().zip(schemas).collect())
}

/// `tools` without agents (an agent does not call another): their definitions and search
/// index, and each one's schema at the same index.
pub(crate) fn callable(tools: Vec<(ToolEntry, ToolSchema)>) -> (ToolCatalog, Vec<ToolSchema>) {
    let tools: Vec<(ToolEntry, ToolSchema)> = tools
        .into_iter()
        .filter(|(entry, _)| entry.kind != Some(ToolKind::Agent))
        .collect();
    let catalog = ToolCatalog::new(&tools);
    let schemas = tools.into_iter().map(|(_, schema)| schema).collect();
    (catalog, schemas)
}

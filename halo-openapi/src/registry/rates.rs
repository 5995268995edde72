//! `limits.rates` are checked at start-up: a limit counted per an argument the operation
//! does not take would never apply, and one per a dimension this version does not know
//! could not be enforced, so either fails the build, naming the operation.

use halo_protocol::{Dimension, MetadataError, ToolSchema};

use super::Registry;
use crate::BuildError;

impl Registry {
    /// Every limit of `limits.rates` has a dimension the layer enforces, and a limit per
    /// argument names an argument of the operation's input.
    pub(super) fn check_rates(&self) -> Result<(), BuildError> {
        match self
            .tools
            .iter()
            .find_map(|tool| problem(&tool.schema, tool.name()))
        {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// What is wrong with the first limit of `limits.rates` of the tool `name`'s `schema` that
/// the layer could not enforce, if one is.
pub(super) fn problem(schema: &ToolSchema, name: &str) -> Option<BuildError> {
    let rates = schema.limits.iter().flat_map(|limits| &limits.rates);
    for limit in rates {
        let message = match limit.per() {
            Dimension::Argument(argument) if !schema.input.contains_key(argument) => format!(
                "a rate limit is counted per `{argument}`, which is not an argument of the \
                 operation (its arguments: {})",
                arguments(schema)
            ),
            Dimension::Unknown(per) => format!(
                "a rate limit is counted per {per:?}; this version counts per caller, tenant, \
                 tool or argument"
            ),
            _ => continue,
        };
        let label = format!("{} {} ({name})", schema.call.method, schema.call.url);
        let source = MetadataError::Invalid {
            key: "x-halo-limits".to_owned(),
            message,
        };
        return Some(BuildError::metadata(&label, source));
    }
    None
}

fn arguments(schema: &ToolSchema) -> String {
    if schema.input.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<String> = schema
        .input
        .keys()
        .map(|name| format!("`{name}`"))
        .collect();
    names.join(", ")
}

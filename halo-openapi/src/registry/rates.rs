//! `limits.rates` are checked at start-up: a limit counted per an argument the operation
//! does not take (alone or in a combination) would never apply, and one per a dimension this
//! version does not know, or per parts that cannot be combined, could not be enforced, so any
//! of them fails the build, naming the operation.

use halo_protocol::{Dimension, MetadataError, ToolSchema};

use super::Registry;
use crate::BuildError;

impl Registry {
    /// Every limit of `limits.rates` has a dimension the layer enforces, and every argument
    /// a limit is counted per (alone or in a combination) is one of the operation's input.
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
        let Some(message) = refusal(limit.per(), schema) else {
            continue;
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

/// Why the layer could not enforce a limit per `per` on the operation of `schema`, if it
/// could not: an argument (alone or among a combination's parts) the operation does not take,
/// a dimension this version does not know, or a combination of parts that cannot be combined.
fn refusal(per: &Dimension, schema: &ToolSchema) -> Option<String> {
    match per {
        Dimension::Combined(parts) => {
            if Dimension::combined(parts.clone()).is_none() {
                return Some(format!(
                    "a rate limit is counted per a combination of {}; a combination has two \
                     parts or more, each caller, tenant or an argument, none twice",
                    parts
                        .iter()
                        .map(|part| format!("`{}`", part.argument().unwrap_or(part.as_str())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            parts.iter().find_map(|part| refusal(part, schema))
        }
        Dimension::Argument(argument) if !schema.input.contains_key(argument) => Some(format!(
            "a rate limit is counted per `{argument}`, which is not an argument of the \
             operation (its arguments: {})",
            arguments(schema)
        )),
        Dimension::Unknown(per) => Some(format!(
            "a rate limit is counted per {per:?}; this version counts per caller, tenant, tool, \
             argument or a combination of them"
        )),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Registry;

    /// A document with one operation, `GET /campaigns/{campaign_id}`, limited by `rates`.
    fn document(rates: Value) -> Value {
        json!({
            "openapi": "3.1.0",
            "info": {"title": "Ads", "version": "1"},
            "paths": {"/campaigns/{campaign_id}": {"get": {
                "operationId": "campaign",
                "parameters": [{"name": "campaign_id", "in": "path", "required": true,
                    "schema": {"type": "string"}}],
                "responses": {"200": {"description": "The campaign"}},
                "x-halo-limits": {"rates": rates},
            }}},
        })
    }

    #[test]
    fn a_combination_names_arguments_of_the_operation() {
        let fine = document(json!([{"rate": "100/50 seconds", "per": "combined", "of": [
            {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}]));
        assert!(Registry::builder(&fine).build().is_ok());

        let unknown = document(json!([{"rate": "1/minute", "per": "combined", "of": [
            {"per": "caller"}, {"per": "argument", "argument": "campaign_id"},
            {"per": "argument", "argument": "region"}]}]));
        let error = Registry::builder(&unknown).build().unwrap_err().to_string();
        assert!(
            error.contains("GET /campaigns/{campaign_id} (campaign)")
                && error.contains("counted per `region`, which is not an argument")
                && error.contains("`campaign_id`"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_dimension_is_still_refused() {
        let newer = document(json!([{"rate": "1/minute", "per": "region"}]));
        let error = Registry::builder(&newer).build().unwrap_err().to_string();
        assert!(error.contains("per \"region\""), "{error}");
    }
}

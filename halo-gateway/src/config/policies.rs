//! `policies`: the gateway's rules (a list), or an MCP Tool Harness document, inline (a map
//! with its `tool_harness` root) or in a file (its path, relative to the configuration).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::file::HarnessRoot;
use crate::policy::{Harness, Policies, Rules};

/// The policies `value` gives, and the Harness file they were read from (watched for
/// changes like the configuration itself).
pub(crate) fn read(
    value: Option<&Value>,
    dir: &Path,
) -> Result<(Policies, Option<PathBuf>), String> {
    match value {
        None | Some(Value::Null) => Ok((Policies::default(), None)),
        Some(rules @ Value::Array(_)) => {
            let rules: Vec<crate::file::Rule> = typed(rules, "policies")?;
            Ok((Policies::Rules(Rules::compile(&rules)?), None))
        }
        Some(inline @ Value::Object(_)) => {
            let root: HarnessRoot = typed(inline, "policies")?;
            Ok((
                Policies::Harness(Harness::compile(&root, "policies")?),
                None,
            ))
        }
        Some(Value::String(file)) => {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("policies: cannot read {}: {e}", path.display()))?;
            let value = crate::read::parse(&text).map_err(|e| format!("{file}: {e}"))?;
            let root: HarnessRoot = typed(&value, file)?;
            let harness = Harness::compile(&root, file)?;
            Ok((Policies::Harness(harness), Some(path)))
        }
        Some(_) => Err(
            "policies: a list of rules, a Harness document (`{tool_harness: {...}}`) or the \
             name of a Harness document's file"
                .into(),
        ),
    }
}

/// `value` read as a `T`; an error names the key, under `at`.
fn typed<T: DeserializeOwned>(value: &Value, at: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let key = match path.as_str() {
            "." => at.to_owned(),
            _ if path.starts_with('[') => format!("{at}{path}"),
            _ => format!("{at}.{path}"),
        };
        format!("{key}: {}", e.into_inner())
    })
}

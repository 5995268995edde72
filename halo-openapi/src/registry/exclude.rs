//! Operations left out of the registry: marked `x-halo-exclude: true` in the document (on
//! the operation or its path item), or named to the builder by `operationId` or path.
//! An excluded operation is no tool: discovery does not know it, and the layer passes its
//! calls to the application untouched.

use halo_protocol::EXCLUDE_EXTENSION;
use serde_json::Value;

/// What the builder was told to leave out.
#[derive(Debug, Default)]
pub(crate) struct Exclusions {
    operation_ids: Vec<String>,
    /// Path keys or templates.
    paths: Vec<String>,
}

impl Exclusions {
    pub(crate) fn operation(&mut self, operation_id: String) {
        self.operation_ids.push(operation_id);
    }

    pub(crate) fn path(&mut self, path: String) {
        self.paths.push(path);
    }

    /// Whether `operation`, of the path item `path_item` at `path_key` (whose template is
    /// `template`), is left out.
    pub(crate) fn excludes(
        &self,
        (path_key, template): (&str, &str),
        path_item: &Value,
        operation: &Value,
    ) -> bool {
        let marked = |value: &Value| value.get(EXCLUDE_EXTENSION) == Some(&Value::Bool(true));
        marked(path_item)
            || marked(operation)
            || self
                .paths
                .iter()
                .any(|path| path == path_key || path == template)
            || operation_id(operation).is_some_and(|id| self.operation_ids.iter().any(|x| x == id))
    }

    /// The first exclusion the builder was given that names nothing among `path_items`
    /// (the document's path keys and their items).
    pub(crate) fn unmatched(&self, path_items: &[(&String, &Value)]) -> Option<&str> {
        let known_path = |wanted: &str| {
            path_items
                .iter()
                .any(|(key, _)| wanted == key.as_str() || wanted == super::template_of(key))
        };
        let known_id = |wanted: &str| {
            path_items
                .iter()
                .flat_map(|(_, item)| super::operations(item))
                .any(|(_, operation)| operation_id(operation) == Some(wanted))
        };
        self.paths
            .iter()
            .find(|path| !known_path(path))
            .or_else(|| self.operation_ids.iter().find(|id| !known_id(id)))
            .map(String::as_str)
    }
}

fn operation_id(operation: &Value) -> Option<&str> {
    operation.get("operationId").and_then(Value::as_str)
}

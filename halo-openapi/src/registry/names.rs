//! Tool names from `operationId`s: unique and safe as LLM function names.

use halo_protocol::{UniqueNames, tool_name};

/// Hands out the tool names of one registry.
#[derive(Debug, Default)]
pub(crate) struct Names {
    unique: UniqueNames,
}

impl Names {
    /// A name from the `operationId`, or from method and path when there is no usable one.
    pub(crate) fn assign(
        &mut self,
        operation_id: Option<&str>,
        method: &str,
        path: &str,
    ) -> String {
        match operation_id.filter(|id| !tool_name(id).is_empty()) {
            Some(id) => self.unique.assign(id),
            None => self
                .unique
                .assign(&format!("{}_{path}", method.to_ascii_lowercase())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_or_method_and_path() {
        let mut names = Names::default();
        assert_eq!(
            names.assign(Some("search_books"), "GET", "/api/books"),
            "search_books"
        );
        assert_eq!(
            names.assign(Some("search_books"), "GET", "/v2/books"),
            "search_books_2"
        );
        assert_eq!(
            names.assign(None, "DELETE", "/api/books/{id}"),
            "delete_api_books_id"
        );
        assert_eq!(names.assign(Some("???"), "GET", "/"), "get");
    }
}

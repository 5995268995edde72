//! Tool names from `operationId`s: unique and safe as LLM function names.

use halo_protocol::{UniqueNames, tool_name};

/// Hands out the tool names of one registry, as the registry does: the `operationId` made
/// safe ([`tool_name`]), or the method and path when it has nothing usable, `_2`, `_3`, ...
/// after a name already given. Give the operations in the order
/// [`operations`](crate::operations) walks them, path by path, to get the registry's names.
///
/// ```
/// use halo_openapi::Names;
///
/// let mut names = Names::default();
/// assert_eq!(names.assign(Some("pets.list"), "GET", "/pets"), "pets_list");
/// assert_eq!(names.assign(None, "DELETE", "/pets/{id}"), "delete_pets_id");
/// assert_eq!(names.assign(Some("pets.list"), "GET", "/v2/pets"), "pets_list_2");
/// ```
#[derive(Debug, Default)]
pub struct Names {
    unique: UniqueNames,
}

impl Names {
    /// A name from the `operationId`, or from method and path when there is no usable one.
    pub fn assign(&mut self, operation_id: Option<&str>, method: &str, path: &str) -> String {
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

//! What the meta-tools answer a model, whichever loop runs them (halo-agent's, the rig
//! adapter of halo-client): a search's answer with a note when it found nothing or could not
//! filter by tags, and the `404` of a tool that does not exist, naming the closest ones.

use serde_json::Value;

use crate::{CALL_TOOL, Problem, SEARCH_TOOLS, SearchRequest, ToolCatalog, ToolDefinition};

/// How many close names the answer to an unknown tool suggests ([`unknown_tool`]).
pub const CLOSE_NAMES: usize = 3;

/// What [`SEARCH_TOOLS`] answers a model: the [`search_answer`](crate::search_answer) of the
/// tools found (best first) and how many more matched, with a `note` when nothing matched
/// (try other words), or when the search could not filter by the tags asked for because the
/// tools carry none (`tags_ignored`: every tool was searched).
///
/// ```
/// use halo_protocol::search_tools_reply;
///
/// let answer = search_tools_reply(&[], 0, false);
/// assert_eq!(answer["tools"], serde_json::json!([]));
/// assert!(answer["note"].as_str().unwrap().contains("no tool matched"));
/// ```
#[must_use]
pub fn search_tools_reply(found: &[&ToolDefinition], more: usize, tags_ignored: bool) -> Value {
    let mut answer = crate::search_answer(found, more);
    let note = if found.is_empty() {
        Some("no tool matched: try other words, or fewer of them")
    } else if tags_ignored {
        Some("these tools carry no tags: every tool was searched")
    } else {
        None
    };
    if let (Value::Object(answer), Some(note)) = (&mut answer, note) {
        answer.insert("note".into(), Value::String(note.to_owned()));
    }
    answer
}

/// The `404` a model reads when it calls a tool that does not exist while it is given
/// [`SEARCH_TOOLS`] and [`CALL_TOOL`]: how to find the right one, and the `close` names
/// (at most [`CLOSE_NAMES`] are worth giving), never the whole list.
///
/// ```
/// let problem = halo_protocol::unknown_tool("update_coupon", &["op_5"]);
/// assert_eq!(problem.status, 404);
/// assert!(problem.detail.unwrap().ends_with("(close names: op_5)"));
/// ```
#[must_use]
pub fn unknown_tool(name: &str, close: &[&str]) -> Problem {
    let mut detail = format!(
        "there is no tool named `{name}`; find the API's tools with {SEARCH_TOOLS}, then call \
         one with {CALL_TOOL}"
    );
    if !close.is_empty() {
        detail.push_str(&format!(" (close names: {})", close.join(", ")));
    }
    Problem::new(404).with_detail(detail)
}

impl ToolCatalog {
    /// The names of the [`CLOSE_NAMES`] tools that a search for `name` ranks first: what
    /// [`unknown_tool`] suggests.
    ///
    /// ```
    /// use halo_protocol::{Call, ToolCatalog, ToolEntry, ToolSchema};
    ///
    /// let catalog = ToolCatalog::new(&[(ToolEntry::new("/books", "GET", "list_books", "List the books"),
    ///                                   ToolSchema::new(Call::new("GET", "/books")))]);
    /// assert_eq!(catalog.close_names("find_books"), ["list_books"]);
    /// ```
    #[must_use]
    pub fn close_names(&self, name: &str) -> Vec<&str> {
        let mut request = SearchRequest::new(name);
        request.limit = CLOSE_NAMES;
        self.search(&request)
            .0
            .into_iter()
            .map(|definition| definition.name.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, ToolEntry, ToolSchema, tool_definitions};

    #[test]
    fn notes_say_why_an_answer_is_empty_or_unfiltered() {
        let found = tool_definitions(&[(
            ToolEntry::new("/ping", "GET", "ping", "Ping."),
            ToolSchema::new(Call::new("GET", "/ping")),
        )]);
        let found: Vec<&ToolDefinition> = found.iter().collect();
        assert!(search_tools_reply(&found, 0, false).get("note").is_none());
        let answer = search_tools_reply(&found, 2, true);
        assert!(answer["note"].as_str().unwrap().contains("no tags"));
        assert_eq!(answer["more"], 2);
        assert_eq!(answer["tools"][0]["name"], "ping");
    }

    #[test]
    fn an_unknown_tool_names_the_way_to_the_right_one() {
        let detail = unknown_tool("x", &[]).detail.unwrap();
        assert!(detail.contains(SEARCH_TOOLS) && detail.contains(CALL_TOOL));
        assert!(!detail.contains("close names"));
    }
}

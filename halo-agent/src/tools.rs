//! [`ToolSet`]: the tools an agent may call.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use halo_protocol::{ToolCatalog, ToolDefinition, ToolOutput};
use serde_json::{Map, Value};

/// The tools an agent may call: their definitions for the model, and a way to call one.
///
/// halo-client's `RemoteTools` calls the tools of a HALO API over HTTP; halo-axum's hosted
/// agents call their own API's tools in process. A call never fails as such: whatever goes
/// wrong (an error status, arguments the tool refuses) is a [`ToolOutput`] with `is_error`,
/// whose text the model reads so that it can correct itself.
///
/// The agent checks what it can before calling: a name that is not among the definitions,
/// or arguments that are not a JSON object, are answered to the model without a call.
///
/// When the definitions cost more than the agent's
/// [`tool_budget`](crate::AgentBuilder::tool_budget), the model searches them instead
/// (`search_tools`); a set that keeps a [`ToolCatalog`] of its tools
/// ([`catalog`](Self::catalog)) is searched with its tags, paths and HALO schemas, any
/// other by its definitions alone.
///
/// ```
/// use futures_util::future::{BoxFuture, FutureExt as _};
/// use halo_agent::ToolSet;
/// use halo_agent::protocol::{ToolDefinition, ToolEntry, ToolOutput, ToolSchema, Call, tool_definitions};
/// use serde_json::{Map, Value, json};
///
/// /// One tool, `clock`, that tells the time.
/// #[derive(Debug)]
/// struct Clock(Vec<ToolDefinition>);
///
/// impl Clock {
///     fn new() -> Self {
///         let entry = ToolEntry::new("/clock", "GET", "clock", "The time, in UTC.");
///         Self(tool_definitions(&[(entry, ToolSchema::new(Call::new("GET", "/clock")))]))
///     }
/// }
///
/// impl ToolSet for Clock {
///     fn definitions(&self) -> &[ToolDefinition] {
///         &self.0
///     }
///
///     fn call<'a>(&'a self, _name: &'a str, _arguments: Map<String, Value>) -> BoxFuture<'a, ToolOutput> {
///         async { ToolOutput::from_response(200, json!({"utc": "12:00"})) }.boxed()
///     }
/// }
/// ```
pub trait ToolSet: Send + Sync {
    /// The tools, as the model sees them; names are unique.
    fn definitions(&self) -> &[ToolDefinition];

    /// Calls the tool `name` (one of the definitions) with `arguments`.
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput>;

    /// The tools as a search catalog, when the set keeps one: searched instead of an index
    /// of the definitions when the model is given `search_tools`, with each tool's tags
    /// (so that `search_tools` can filter by them), path, `why` and parameters. Its
    /// definitions must be [`definitions`](Self::definitions), in the same order (a catalog
    /// that does not match is not used). None by default.
    ///
    /// ```
    /// use halo_agent::ToolSet;
    /// use halo_agent::protocol::{Call, ToolCatalog, ToolDefinition, ToolEntry, ToolOutput, ToolSchema};
    /// use futures_util::future::{BoxFuture, FutureExt as _};
    /// use serde_json::{Map, Value};
    ///
    /// struct Books(ToolCatalog);
    ///
    /// impl ToolSet for Books {
    ///     fn definitions(&self) -> &[ToolDefinition] {
    ///         self.0.definitions()
    ///     }
    ///
    ///     fn call<'a>(&'a self, _: &'a str, _: Map<String, Value>) -> BoxFuture<'a, ToolOutput> {
    ///         async { ToolOutput::from_response(200, Value::Null) }.boxed()
    ///     }
    ///
    ///     fn catalog(&self) -> Option<&ToolCatalog> {
    ///         Some(&self.0)
    ///     }
    /// }
    ///
    /// let entry = ToolEntry::new("/books", "GET", "list_books", "List the books").with_tags(["books"]);
    /// let books = Books(ToolCatalog::new(&[(entry, ToolSchema::new(Call::new("GET", "/books")))]));
    /// assert_eq!(books.catalog().unwrap().definitions()[0].name, "list_books");
    /// ```
    fn catalog(&self) -> Option<&ToolCatalog> {
        None
    }
}

/// Implements [`ToolSet`] for a smart pointer to a tool set (`Arc<T>`, `Box<T>`) by
/// calling the set it points to.
macro_rules! forward_tool_set {
    ($($pointer:ident),+) => {$(
        impl<T: ToolSet + ?Sized> ToolSet for $pointer<T> {
            fn definitions(&self) -> &[ToolDefinition] {
                (**self).definitions()
            }

            fn call<'a>(
                &'a self,
                name: &'a str,
                arguments: Map<String, Value>,
            ) -> BoxFuture<'a, ToolOutput> {
                (**self).call(name, arguments)
            }

            fn catalog(&self) -> Option<&ToolCatalog> {
                (**self).catalog()
            }
        }
    )+};
}

forward_tool_set!(Arc, Box);

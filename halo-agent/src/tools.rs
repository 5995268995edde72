//! [`ToolSet`]: the tools an agent may call.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use halo_protocol::{ToolDefinition, ToolOutput};
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
}

impl<T: ToolSet + ?Sized> ToolSet for Arc<T> {
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
}

impl<T: ToolSet + ?Sized> ToolSet for Box<T> {
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
}

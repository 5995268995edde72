//! [`Client`]: one HALO API, discovered, described and called.
//!
//! One idea a file, as reqwest's `async_impl` separates its client, request and redirect
//! code:
//!
//! - this file: the [`Client`] and its calls ([`Client::invoke`], [`Client::call`], and
//!   their streamed forms, opened in [`stream`]);
//! - [`builder`]: [`ClientBuilder`], the settings and the HTTP client under them;
//! - [`discover`]: the manifest, the per-path schemas and their cache;
//! - [`request`]: a tool call made ready to send (arguments placed, URL resolved,
//!   idempotency key, what may be repeated);
//! - [`execute`]: a request under its retry policy, the client's timeout and its host's
//!   circuit breaker;
//! - [`redirect`]: one attempt's hops, with the credential of each hop's own host;
//! - [`cancel`]: a running call cancelled, and calls named so that they can be;
//! - [`stream`]: a streamed call opened, and its events read ([`ToolStream`]), resumed across
//!   dropped connections;
//! - [`approval`]: approvals read, decided and withdrawn, and the wait of a held call for its
//!   decision.
//!
//! What these files name of the rest of the crate sits below them: the data types of
//! approvals, events, responses and errors never name the client back.

mod approval;
mod builder;
mod cancel;
mod discover;
mod execute;
mod redirect;
mod request;
#[cfg(feature = "ws")]
mod socket;
mod stream;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use halo_protocol::ToolSchema;
use reqwest::{Method, Url};
use serde_json::Value;

pub(crate) use self::approval::ApprovalSettings;
pub use self::builder::ClientBuilder;
pub use self::cancel::{CallId, CancelOutcome};
pub use self::discover::Discovered;
use self::discover::{SchemaCache, find};
pub(crate) use self::execute::{checked, read};
pub(crate) use self::request::Prepared;
use self::request::decode_error;
pub use self::stream::ToolStream;
use crate::breaker::{Breakers, Pass};
use crate::{Credentials, Result, RetryPolicy, ToolResponse};

/// A HALO client for one API: discovers it, describes its tools (cached), and calls them.
///
/// Cheap to clone: clones share one connection pool and one schema cache.
///
/// ```no_run
/// use halo_client::{Client, Credential, Credentials, Method};
/// use serde_json::json;
///
/// # async fn run() -> halo_client::Result<()> {
/// let client = Client::builder("http://127.0.0.1:3000")
///     .credentials(Credentials::new().with("127.0.0.1:3000", Credential::bearer("demo-admin")))
///     .build()?;
/// let manifest = client.discover(&["books"]).await?;
/// for tool in &manifest.tools {
///     println!("{} {} {}", tool.method, tool.url, tool.name);
/// }
/// let book = client.invoke("/api/books/{id}", Method::GET, json!({"id": 1})).await?;
/// println!("{}", book.to_value());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: String,
    /// `base`, parsed once.
    base_url: Url,
    credentials: Credentials,
    retry: RetryPolicy,
    /// The circuit of each host that has failed.
    breakers: Breakers,
    /// The bound on one attempt (redirects and body included; an event stream's head).
    timeout: Option<Duration>,
    /// The longest an event stream may stay silent.
    idle_timeout: Option<Duration>,
    schema_ttl: Duration,
    concurrency: usize,
    /// How streamed calls receive their events.
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    transport: crate::Transport,
    cache: Mutex<SchemaCache>,
    /// What calls held for approval do.
    approvals: ApprovalSettings,
}

impl Client {
    /// A builder for a client of the API at `base_url`.
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base_url.into())
    }

    /// A client with default settings and no credentials.
    ///
    /// # Errors
    /// When `base_url` is not an absolute `http` or `https` URL.
    pub fn new(base_url: impl Into<String>) -> Result<Self> {
        Self::builder(base_url).build()
    }

    /// The API's base URL (without a trailing slash).
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// Calls the `method` operation at `url` with `args` (a JSON object): describes it
    /// (cached), places each argument where its schema says, and sends it with the host's
    /// credentials and the retry policy.
    ///
    /// `url` may be a template (`/api/books/{id}`, filled from `args`) or a concrete path.
    ///
    /// # Errors
    /// [`Error::is_argument`](crate::Error::is_argument) when the arguments cannot be placed, [`Error::is_status`](crate::Error::is_status) (with
    /// the problem body) when the server answers 4xx or 5xx, and transport errors.
    pub async fn invoke(&self, url: &str, method: Method, args: Value) -> Result<ToolResponse> {
        let request = self.invocation(url, method, args).await?;
        self.execute(&request).await
    }

    /// Calls the operation a schema describes, at its `call.url`.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke).
    pub async fn call(&self, schema: &ToolSchema, args: Value) -> Result<ToolResponse> {
        self.execute(&self.calling(schema, args)?).await
    }

    /// Calls the `method` operation at `url` as [`invoke`](Self::invoke) does, asking for
    /// its events as they happen (`Accept: text/event-stream`).
    ///
    /// The answer is a [`ToolStream`] of the call's events: `tool_start`, any number of
    /// `tool_progress`, then `tool_end` or `tool_error`, each exactly once and in order.
    /// When the connection drops (or nothing arrives for the builder's
    /// [`stream_idle_timeout`](ClientBuilder::stream_idle_timeout)), the client reconnects
    /// with `Last-Event-ID` and `Halo-Call-Id`, and the server sends only what was missed: the
    /// tool does not run again. A server that does not stream answers as usual, and the
    /// stream holds that answer as a single `tool_end`.
    ///
    /// ```no_run
    /// use futures_util::StreamExt as _;
    /// use halo_client::protocol::ToolEvent;
    /// use halo_client::{Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::new("http://127.0.0.1:3000")?;
    /// let mut events = client
    ///     .invoke_stream("/api/books/{id}/summary", Method::POST, json!({"id": 1}))
    ///     .await?;
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     match event.event() {
    ///         ToolEvent::ToolProgress(progress) => println!("{} {progress}", event.id()),
    ///         ToolEvent::ToolEnd(end) => println!("done: {}", end.content),
    ///         other => println!("{} {}", event.id(), other.name()),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke) for everything up to the first byte of the stream (a
    /// `4xx` answer keeps its status and problem); what goes wrong later is an error item on
    /// the stream, which then ends.
    pub async fn invoke_stream(
        &self,
        url: &str,
        method: Method,
        args: Value,
    ) -> Result<ToolStream> {
        self.stream(self.invocation(url, method, args).await?).await
    }

    /// Calls the operation a schema describes, at its `call.url`, as a stream of events.
    ///
    /// # Errors
    /// As [`invoke_stream`](Self::invoke_stream).
    pub async fn call_stream(&self, schema: &ToolSchema, args: Value) -> Result<ToolStream> {
        self.stream(self.calling(schema, args)?).await
    }

    /// The request of the `method` operation at `url` with `args` placed, its schema looked
    /// up (cached): what [`invoke`](Self::invoke) and its variants send.
    async fn invocation(&self, url: &str, method: Method, args: Value) -> Result<Prepared> {
        let schemas = self.schemas(url).await?;
        let schema = find(&schemas, &method, url)?;
        self.prepare(url, method, schema, args)
    }

    /// The request of the operation `schema` describes, at its `call.url`, with `args`
    /// placed: what [`call`](Self::call) and its variants send.
    fn calling(&self, schema: &ToolSchema, args: Value) -> Result<Prepared> {
        let method = parse_method(&schema.call.method)?;
        self.prepare(&schema.call.url, method, schema, args)
    }

    /// The client's retry policy (also what stream resumptions follow).
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// A pass through the circuit breakers for one call.
    pub(crate) fn pass(&self) -> Pass<'_> {
        self.inner.breakers.pass()
    }

    /// What calls held for approval do.
    pub(crate) fn approval_settings(&self) -> &ApprovalSettings {
        &self.inner.approvals
    }

    /// How streamed calls receive their events.
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    pub(crate) fn transport(&self) -> crate::Transport {
        self.inner.transport
    }

    /// The idle timeout of event streams.
    pub(crate) fn stream_idle_timeout(&self) -> Option<Duration> {
        self.inner.idle_timeout
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.inner.base)
            .field("credentials", &self.inner.credentials)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

fn parse_method(method: &str) -> Result<Method> {
    Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| decode_error(format!("`{method}` is not an HTTP method")))
}

//! [`Client`]: discovery, schema cache, invocation.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};
use halo_protocol::{EVENT_STREAM, MEDIA_TYPE, Manifest, ToolEntry, ToolSchema};
use reqwest::header::{
    ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderMap, HeaderName, HeaderValue, IF_NONE_MATCH,
    LOCATION, VARY,
};
use reqwest::{Method, StatusCode, Url, redirect};
use serde_json::Value;

use crate::args::{self, Payload};
use crate::credentials;
use crate::retry::Failure;
use crate::{Credential, Credentials, Error, Result, RetryPolicy, ToolResponse, ToolStream};

/// How many redirects one attempt follows.
const MAX_REDIRECTS: usize = 10;

/// The header that makes a repeated request safe (IETF draft `Idempotency-Key`).
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

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
    /// The bound on one attempt (redirects and body included; an event stream's head).
    timeout: Option<Duration>,
    /// The longest an event stream may stay silent.
    idle_timeout: Option<Duration>,
    schema_ttl: Duration,
    concurrency: usize,
    cache: Mutex<SchemaCache>,
}

/// Schemas by the path text they were asked for; hashed with foldhash, since every
/// `invoke` looks here first.
type SchemaCache = HashMap<String, Cached, foldhash::fast::RandomState>;

/// The schemas of one path, with what is needed to revalidate them.
#[derive(Clone)]
struct Cached {
    schemas: Arc<Vec<ToolSchema>>,
    etag: Option<HeaderValue>,
    fresh_until: Instant,
}

/// A manifest and the entity tag it was served with (see [`Client::discover_since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discovered {
    /// The manifest.
    pub manifest: Manifest,
    /// Its `ETag`, for the next [`Client::discover_since`].
    pub etag: Option<String>,
    /// Its `Cache-Control`: how long it stays fresh, and for whom.
    pub cache_control: Option<String>,
    /// Its `Vary`: what else it depends on (`Authorization` when it depends on the caller).
    pub vary: Option<String>,
}

/// Builds a [`Client`].
#[derive(Debug)]
#[must_use]
pub struct ClientBuilder {
    base: String,
    timeout: Option<Duration>,
    /// `None`: the same as `timeout`.
    idle_timeout: Option<Option<Duration>>,
    connect_timeout: Duration,
    user_agent: Option<String>,
    credentials: Credentials,
    retry: RetryPolicy,
    schema_ttl: Duration,
    concurrency: usize,
}

impl Client {
    /// A builder for a client of the API at `base_url`.
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base: base_url.into(),
            timeout: Some(Duration::from_secs(30)),
            idle_timeout: None,
            connect_timeout: Duration::from_secs(10),
            user_agent: None,
            credentials: Credentials::new(),
            retry: RetryPolicy::new(),
            schema_ttl: Duration::from_secs(60),
            concurrency: 8,
        }
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

    /// Discovers the API: `OPTIONS /`, filtered by `tags` (any of them; none means all).
    ///
    /// # Errors
    /// A transport error, an error status, or a body that is not a manifest.
    pub async fn discover(&self, tags: &[&str]) -> Result<Manifest> {
        match self.discover_since(tags, None).await? {
            Some(discovered) => Ok(discovered.manifest),
            None => Err(Error::not_described(
                "the server answered OPTIONS / with 304 to a request that named no entity tag",
            )),
        }
    }

    /// Discovers the API as [`discover`](Self::discover) does, unless the manifest still has
    /// the entity tag `etag` (from an earlier answer): then the server answers `304` without
    /// a body and this returns `None`. For watching an API for changes cheaply.
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let first = client.discover_since(&[], None).await?.expect("no entity tag given");
    /// // ... later:
    /// if let Some(changed) = client.discover_since(&[], first.etag.as_deref()).await? {
    ///     println!("{} tools now", changed.manifest.tools.len());
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`discover`](Self::discover).
    pub async fn discover_since(
        &self,
        tags: &[&str],
        etag: Option<&str>,
    ) -> Result<Option<Discovered>> {
        let mut url = self.resolve("/")?;
        if !tags.is_empty() {
            url.query_pairs_mut().append_pair("tags", &tags.join(","));
        }
        let etag = etag.and_then(|etag| HeaderValue::try_from(etag).ok());
        let response = self.discovery_request(url, etag).await?;
        if response.status() == StatusCode::NOT_MODIFIED {
            return Ok(None);
        }
        let json = response.json().ok_or_else(|| {
            Error::not_described(format!(
                "the server answered OPTIONS / without a HALO manifest ({})",
                response.status()
            ))
        })?;
        let manifest = serde_json::from_value(json.clone())
            .map_err(|e| Error::decode(e).with_context("OPTIONS /"))?;
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Ok(Some(Discovered {
            manifest,
            etag: header(ETAG),
            cache_control: header(CACHE_CONTROL),
            vary: header(VARY),
        }))
    }

    /// The schema of the `method` operation at `url` (a path of the API, a concrete path such
    /// as `/api/books/42`, or an absolute URL).
    ///
    /// Schemas are cached per path. After the server's `Cache-Control: max-age` (or the
    /// client's schema TTL when it sends none) a cached path is revalidated with
    /// `If-None-Match`, and a `304` keeps it without a body.
    ///
    /// # Errors
    /// As [`discover`](Self::discover), and [`Error::is_not_described`] when the path does not
    /// describe `method` (never another method's schema).
    pub async fn describe(&self, url: &str, method: Method) -> Result<ToolSchema> {
        let schemas = self.schemas(url).await?;
        find(&schemas, &method, url).cloned()
    }

    /// The schemas of every method a path describes, in the server's order (one request,
    /// cached like [`describe`](Self::describe)).
    ///
    /// # Errors
    /// As [`describe`](Self::describe); a path the server does not describe is
    /// [`Error::is_not_described`].
    pub async fn describe_path(&self, url: &str) -> Result<Vec<ToolSchema>> {
        Ok(self.schemas(url).await?.as_ref().clone())
    }

    /// The schemas of many tools, fetched concurrently (at most the builder's `concurrency` at
    /// a time, one request per path however many methods it has), in the order given. A tool
    /// at `/`, whose `OPTIONS` is the manifest, gets the schema its entry makes
    /// ([`entry_schema`](halo_protocol::entry_schema)).
    ///
    /// # Errors
    /// The first error of any of them.
    pub async fn describe_all<'a, I>(&self, tools: I) -> Result<Vec<ToolSchema>>
    where
        I: IntoIterator<Item = &'a ToolEntry>,
    {
        let tools: Vec<&ToolEntry> = tools.into_iter().collect();
        let mut paths: Vec<&str> = tools
            .iter()
            .map(|tool| tool.url.as_str())
            .filter(|url| *url != "/")
            .collect();
        paths.sort_unstable();
        paths.dedup();
        let fetched: HashMap<&str, Arc<Vec<ToolSchema>>> = stream::iter(paths)
            .map(|path| async move { self.schemas(path).await.map(|schemas| (path, schemas)) })
            .buffer_unordered(self.inner.concurrency)
            .try_collect()
            .await?;
        tools
            .iter()
            .map(|tool| {
                if tool.url == "/" {
                    return Ok(halo_protocol::entry_schema(tool));
                }
                let method = parse_method(&tool.method)?;
                find(&fetched[tool.url.as_str()], &method, &tool.url).cloned()
            })
            .collect()
    }

    /// Calls the `method` operation at `url` with `args` (a JSON object): describes it
    /// (cached), places each argument where its schema says, and sends it with the host's
    /// credentials and the retry policy.
    ///
    /// `url` may be a template (`/api/books/{id}`, filled from `args`) or a concrete path.
    ///
    /// # Errors
    /// [`Error::is_argument`] when the arguments cannot be placed, [`Error::is_status`] (with
    /// the problem body) when the server answers 4xx or 5xx, and transport errors.
    pub async fn invoke(&self, url: &str, method: Method, args: Value) -> Result<ToolResponse> {
        let schemas = self.schemas(url).await?;
        let schema = find(&schemas, &method, url)?;
        let request = self.prepare(url, method, schema, args)?;
        self.execute(&request).await
    }

    /// Calls the operation a schema describes, at its `call.url`.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke).
    pub async fn call(&self, schema: &ToolSchema, args: Value) -> Result<ToolResponse> {
        let method = parse_method(&schema.call.method)?;
        let request = self.prepare(&schema.call.url, method, schema, args)?;
        self.execute(&request).await
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
        let schemas = self.schemas(url).await?;
        let schema = find(&schemas, &method, url)?;
        let request = self.prepare(url, method, schema, args)?;
        self.stream(request).await
    }

    /// Calls the operation a schema describes, at its `call.url`, as a stream of events.
    ///
    /// # Errors
    /// As [`invoke_stream`](Self::invoke_stream).
    pub async fn call_stream(&self, schema: &ToolSchema, args: Value) -> Result<ToolStream> {
        let method = parse_method(&schema.call.method)?;
        let request = self.prepare(&schema.call.url, method, schema, args)?;
        self.stream(request).await
    }

    /// A tool call, ready to send: arguments placed, URL resolved, an idempotency key added
    /// when the schema advertises one, and what may be repeated decided.
    fn prepare(
        &self,
        template: &str,
        method: Method,
        schema: &ToolSchema,
        args: Value,
    ) -> Result<Prepared> {
        let placed = args::place(template, &method, Some(schema), args)?;
        let mut url = self.resolve(&placed.target)?;
        if !placed.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&placed.query);
        }
        let mut headers = placed.headers;
        let limits = schema.limits.as_ref();
        let idempotent_method = halo_protocol::is_idempotent_method(method.as_str());
        if let Some(name) = limits.and_then(|l| l.idempotency_key.as_deref())
            && !idempotent_method
        {
            let name = HeaderName::try_from(name)
                .map_err(|_| decode_error("the schema's idempotency_key is not a header name"))?;
            if !headers.contains_key(&name) {
                let key = uuid::Uuid::new_v4().to_string();
                headers.insert(
                    name,
                    HeaderValue::try_from(key).expect("a UUID is a valid header value"),
                );
            }
        }
        // A key makes a repeat safe; otherwise what the schema declares, else the method.
        let keyed = headers.contains_key(IDEMPOTENCY_KEY)
            || limits
                .and_then(|l| l.idempotency_key.as_deref())
                .is_some_and(|name| headers.contains_key(name));
        let safe = keyed
            || limits
                .and_then(|l| l.idempotent)
                .unwrap_or(idempotent_method);
        let retries = schema.resilience.as_ref().and_then(|r| r.retry) != Some(false);
        let policy = if retries {
            self.inner.retry
        } else {
            RetryPolicy::none()
        };
        Ok(Prepared {
            method,
            url,
            headers,
            body: placed.body.map(encode).transpose()?,
            key_header: credentials::scheme_header(schema.auth.as_ref()),
            safe,
            policy,
        })
    }

    /// Opens a streamed call: the request under its retry policy until the answer's head
    /// arrives; an event stream is read by the [`ToolStream`], any other answer whole.
    async fn stream(&self, mut request: Prepared) -> Result<ToolStream> {
        request
            .headers
            .insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
        let opened = {
            let what = request.label();
            let opened = request
                .policy
                .run(request.safe, &what, || self.timed(self.open(&request)))
                .await
                .map_err(|failure| failure.into_error().with_context(what.to_string()))?;
            match opened {
                Opened::Complete(response) => Opened::Complete(checked(response, &what)?),
                events => events,
            }
        };
        Ok(ToolStream::new(self.clone(), request, opened))
    }

    /// The client's retry policy (also what stream resumptions follow).
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// The schemas of a path, from the cache while fresh, revalidated after.
    async fn schemas(&self, url: &str) -> Result<Arc<Vec<ToolSchema>>> {
        // Keyed by the text asked for, so a fresh hit costs no URL parsing.
        let key = url.split(['?', '#']).next().unwrap_or_default();
        let cached = {
            let cache = self.cache();
            match cache.get(key) {
                Some(hit) if hit.fresh_until > Instant::now() => {
                    return Ok(Arc::clone(&hit.schemas));
                }
                stale => stale.cloned(),
            }
        };
        let url = self.resolve(key)?;
        let etag = cached.as_ref().and_then(|c| c.etag.clone());
        let path = url.path().to_owned();
        let response = match self.discovery_request(url, etag).await {
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => {
                return Err(Error::not_described(format!("{key} (404)")));
            }
            other => other?,
        };
        let fresh_until = Instant::now() + self.freshness(response.headers());
        let schemas = match (response.status(), cached) {
            (StatusCode::NOT_MODIFIED, Some(cached)) => cached.schemas,
            _ => Arc::new(parse_schemas(&response, &path)?),
        };
        let entry = Cached {
            schemas: Arc::clone(&schemas),
            etag: response.headers().get(ETAG).cloned(),
            fresh_until,
        };
        self.cache().insert(key.to_owned(), entry);
        Ok(schemas)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, SchemaCache> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `max-age` from `Cache-Control`; zero for `no-cache`/`no-store`; the schema TTL without it.
    fn freshness(&self, headers: &HeaderMap) -> Duration {
        let Some(cache_control) = headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
            return self.inner.schema_ttl;
        };
        let mut max_age = None;
        for directive in cache_control.split(',').map(str::trim) {
            let lower = directive.to_ascii_lowercase();
            if lower == "no-cache" || lower == "no-store" {
                return Duration::ZERO;
            }
            if let Some(seconds) = lower.strip_prefix("max-age=") {
                max_age = seconds
                    .trim_matches('"')
                    .parse()
                    .ok()
                    .map(Duration::from_secs);
            }
        }
        max_age.unwrap_or(self.inner.schema_ttl)
    }

    /// An `OPTIONS` discovery request (safe, so retried by the policy).
    pub(crate) async fn discovery_request(
        &self,
        url: Url,
        etag: Option<HeaderValue>,
    ) -> Result<ToolResponse> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
        if let Some(etag) = etag {
            headers.insert(IF_NONE_MATCH, etag);
        }
        let request = Prepared {
            method: Method::OPTIONS,
            url,
            headers,
            body: None,
            key_header: None,
            safe: true,
            policy: self.inner.retry,
        };
        self.execute(&request).await
    }

    /// A URL of the API: a relative path is appended to the base URL, an absolute URL is
    /// used as it is.
    fn resolve(&self, target: &str) -> Result<Url> {
        if target.starts_with("http://") || target.starts_with("https://") {
            return Url::parse(target).map_err(invalid_url);
        }
        if target.contains(['?', '#']) {
            let separator = if target.starts_with('/') { "" } else { "/" };
            return Url::parse(&format!("{}{separator}{target}", self.inner.base))
                .map_err(invalid_url);
        }
        // Only the path changes: no need to parse the scheme and host again.
        let mut url = self.inner.base_url.clone();
        let prefix = url.path().trim_end_matches('/');
        let path: Cow<'_, str> = match (prefix.is_empty(), target.starts_with('/')) {
            (true, true) => Cow::Borrowed(target),
            (true, false) => Cow::Owned(format!("/{target}")),
            (false, true) => Cow::Owned(format!("{prefix}{target}")),
            (false, false) => Cow::Owned(format!("{prefix}/{target}")),
        };
        url.set_path(&path);
        Ok(url)
    }

    /// Sends a request under its retry policy; a 4xx or 5xx answer becomes an error that
    /// keeps the response and names the request (`POST /api/orders`).
    async fn execute(&self, request: &Prepared) -> Result<ToolResponse> {
        let what = request.label();
        let response = request
            .policy
            .run(request.safe, &what, || self.timed(self.attempt(request)))
            .await
            .map_err(|failure| failure.into_error().with_context(what.to_string()))?;
        checked(response, &what)
    }

    /// An attempt under the client's timeout. One timer around the whole attempt costs less
    /// than reqwest's own (a boxed timer for the headers and another for the body); for an
    /// event stream it ends with the answer's head, so that it never cuts a long stream.
    pub(crate) async fn timed<T>(
        &self,
        attempt: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        match self.inner.timeout {
            Some(limit) => tokio::time::timeout(limit, attempt)
                .await
                .unwrap_or(Err(Failure::TimedOut)),
            None => attempt.await,
        }
    }

    /// One attempt: send, follow redirects, read the body.
    async fn attempt(&self, request: &Prepared) -> Result<ToolResponse, Failure> {
        read(self.send(request).await?).await
    }

    /// One attempt at a streamed call: send, follow redirects, then keep an event stream
    /// open or read any other answer whole.
    pub(crate) async fn open(&self, request: &Prepared) -> Result<Opened, Failure> {
        let response = self.send(request).await?;
        if response.status().is_success() && is_event_stream(response.headers()) {
            return Ok(Opened::Events(response));
        }
        read(response).await.map(Opened::Complete)
    }

    /// Sends a request and follows redirects, re-deciding credentials at every hop; the
    /// answer's body is still to be read. An OAuth access token the API refuses (`401`) is
    /// renewed and the request sent once more (that repeat counts as a hop).
    async fn send(&self, request: &Prepared) -> Result<reqwest::Response, Failure> {
        let mut method = request.method.clone();
        let mut url = request.url.clone();
        let mut body = request.body.clone();
        let mut renewed = false;
        for _ in 0..=MAX_REDIRECTS {
            let credentials = &self.inner.credentials;
            let mut headers = request.headers.clone();
            for name in credentials.headers() {
                headers.remove(name);
            }
            if credentials.has_scheme_keys()
                && let Some(name) = &request.key_header
            {
                headers.remove(name);
            }
            // The tool's description names the key header of its own origin only, not of
            // one a redirect leads to.
            let key_header = request
                .key_header
                .as_ref()
                .filter(|_| url.origin() == request.url.origin());
            // The credential, and what it sent if a refusal can renew it.
            let mut renewable = None;
            if let Some(credential) = credentials.for_url(&url) {
                let sent = credential
                    .apply(&self.inner.http, &mut headers, key_header)
                    .await
                    .map_err(Failure::credential)?;
                renewable = sent.filter(|_| !renewed).map(|sent| (credential, sent));
            }
            let mut outgoing = reqwest::Request::new(method.clone(), url.clone());
            if let Some(body) = &body {
                headers.insert(CONTENT_TYPE, body.content_type.clone());
                *outgoing.body_mut() = Some(body.bytes.clone().into());
            }
            *outgoing.headers_mut() = headers;
            // Boxed: reqwest's future is large, and every future around it would otherwise
            // carry (and move) it.
            let response = Box::pin(self.inner.http.execute(outgoing))
                .await
                .map_err(Failure::Transport)?;
            if response.status() == StatusCode::UNAUTHORIZED
                && let Some((credential, sent)) = renewable
            {
                // Refused before it ran: renew the credential and send the request again.
                credential.refused(&sent).await;
                renewed = true;
                continue;
            }
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(response);
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| Failure::Fatal(Error::redirect("a redirect without a Location")))?;
            url = url
                .join(location)
                .map_err(|_| Failure::Fatal(Error::redirect("an invalid Location")))?;
            let downgrade = status == StatusCode::SEE_OTHER
                || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                    && method == Method::POST);
            if downgrade {
                method = Method::GET;
                body = None;
            }
        }
        Err(Failure::Fatal(Error::redirect(format!(
            "more than {MAX_REDIRECTS} redirects"
        ))))
    }

    /// The idle timeout of event streams.
    pub(crate) fn stream_idle_timeout(&self) -> Option<Duration> {
        self.inner.idle_timeout
    }
}

/// Reads an answer's body; a status worth retrying is a failure for the policy to judge.
async fn read(mut response: reqwest::Response) -> Result<ToolResponse, Failure> {
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let bytes = response.bytes().await.map_err(Failure::Transport)?;
    let response = ToolResponse::new(status, headers, &bytes);
    if Failure::is_retryable_status(status) {
        return Err(Failure::status(response));
    }
    Ok(response)
}

/// A 4xx or 5xx answer as an error naming the request.
fn checked(response: ToolResponse, what: &impl std::fmt::Display) -> Result<ToolResponse> {
    if response.status().is_client_error() || response.status().is_server_error() {
        return Err(Error::from_response(response).with_context(what.to_string()));
    }
    Ok(response)
}

/// Whether a response's `Content-Type` is `text/event-stream` (parameters aside).
fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| halo_protocol::essence(v).eq_ignore_ascii_case(EVENT_STREAM))
}

/// What one attempt at a streamed call got.
pub(crate) enum Opened {
    /// A `2xx` event stream, its body still to be read.
    Events(reqwest::Response),
    /// Any other answer, read whole.
    Complete(ToolResponse),
}

/// A request, ready to be sent as many times as its policy allows.
#[derive(Clone)]
pub(crate) struct Prepared {
    method: Method,
    url: Url,
    pub(crate) headers: HeaderMap,
    body: Option<Encoded>,
    /// The API-key header its tool's security scheme names, for a key that goes where the
    /// scheme says ([`Credential::api_key_in_scheme_header`]).
    key_header: Option<HeaderName>,
    /// Whether repeating it cannot duplicate a side effect.
    pub(crate) safe: bool,
    /// Its tool's retry policy (none for `resilience.retry: false`), which also bounds the
    /// reconnections of a stream.
    pub(crate) policy: RetryPolicy,
}

/// A body, encoded once however many times it is sent.
#[derive(Clone)]
struct Encoded {
    content_type: HeaderValue,
    bytes: Bytes,
}

/// Encodes a placed body: JSON as `application/json`, raw bytes with their media type.
fn encode(payload: Payload) -> Result<Encoded> {
    match payload {
        Payload::Json(value) => Ok(Encoded {
            content_type: HeaderValue::from_static("application/json"),
            bytes: serde_json::to_vec(&value)
                .map_err(|e| Error::argument(format!("the body cannot be encoded: {e}")))?
                .into(),
        }),
        Payload::Raw {
            content_type,
            bytes,
        } => Ok(Encoded {
            content_type: HeaderValue::try_from(content_type).map_err(|_| {
                Error::argument("the body's media type is not a valid Content-Type")
            })?,
            bytes: bytes.into(),
        }),
    }
}

impl Prepared {
    /// `POST /api/orders`: the method and path, never the query (which may carry secrets).
    pub(crate) fn label(&self) -> impl std::fmt::Display + '_ {
        struct Label<'a>(&'a Method, &'a str);
        impl std::fmt::Display for Label<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{} {}", self.0, self.1)
            }
        }
        Label(&self.method, self.url.path())
    }
}

impl ClientBuilder {
    /// The total time one attempt may take (30 s by default); `None` for no limit.
    ///
    /// For a streamed call ([`Client::invoke_stream`]) it bounds the wait for the answer's
    /// head only: the events that follow are bounded by the
    /// [`stream_idle_timeout`](Self::stream_idle_timeout) instead.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest an event stream may stay silent (no event, no keep-alive comment) before
    /// the client takes the connection for dropped and resumes the call on a new one; `None`
    /// for no limit. The same as [`timeout`](Self::timeout) by default.
    pub fn stream_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// The time to establish a connection (10 s by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sends a `User-Agent` header (none by default, as with reqwest: each header costs a
    /// little on every request).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = Some(user_agent.into());
        self
    }

    /// Credentials by host, applied by the host of every request's own URL.
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// A credential for the base URL's host, added to the credentials map.
    pub fn credential(mut self, credential: Credential) -> Self {
        if let Ok(url) = Url::parse(&self.base)
            && let Some(host) = url.host_str()
        {
            let key = match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            };
            self.credentials.insert(key, credential);
        }
        self
    }

    /// The retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How long a schema is used without revalidation when the server sends no
    /// `Cache-Control: max-age` (60 s by default).
    pub fn schema_ttl(mut self, ttl: Duration) -> Self {
        self.schema_ttl = ttl;
        self
    }

    /// How many schemas [`Client::describe_all`] fetches at once (8 by default).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Builds the client.
    ///
    /// # Errors
    /// When the base URL is not an absolute `http` or `https` URL, or the HTTP client cannot
    /// be created.
    pub fn build(self) -> Result<Client> {
        let base = self.base.trim_end_matches('/').to_owned();
        let parsed =
            Url::parse(&base).map_err(|e| Error::builder(format!("invalid base URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(Error::builder(
                "the base URL must be an absolute http or https URL",
            ));
        }
        let mut http = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .connect_timeout(self.connect_timeout);
        if let Some(user_agent) = self.user_agent {
            http = http.user_agent(user_agent);
        }
        let http = http
            .build()
            .map_err(|e| Error::builder(e.without_url().to_string()))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base_url: parsed,
                base,
                credentials: self.credentials,
                retry: self.retry,
                timeout: self.timeout,
                idle_timeout: self.idle_timeout.unwrap_or(self.timeout),
                schema_ttl: self.schema_ttl,
                concurrency: self.concurrency,
                cache: Mutex::new(HashMap::default()),
            }),
        })
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

fn invalid_url(error: impl std::fmt::Display) -> Error {
    Error::argument(format!("invalid URL: {error}"))
}

fn decode_error(message: impl Into<String>) -> Error {
    Error::decode(message.into())
}

/// The schema for `method` among a path's schemas.
fn find<'a>(schemas: &'a [ToolSchema], method: &Method, url: &str) -> Result<&'a ToolSchema> {
    schemas
        .iter()
        .find(|schema| schema.call.method.eq_ignore_ascii_case(method.as_str()))
        .ok_or_else(|| {
            let offered: Vec<&str> = schemas.iter().map(|s| s.call.method.as_str()).collect();
            Error::not_described(format!(
                "{url} describes {} but not {method}",
                if offered.is_empty() {
                    "no method".to_owned()
                } else {
                    offered.join(", ")
                }
            ))
        })
}

/// A per-path answer: an array of schemas, or the single object older servers send.
fn parse_schemas(response: &ToolResponse, url: &str) -> Result<Vec<ToolSchema>> {
    let json = response.json().ok_or_else(|| {
        Error::not_described(format!(
            "{url} answered OPTIONS without a HALO description ({})",
            response.status()
        ))
    })?;
    let parsed = match json {
        Value::Array(_) => serde_json::from_value(json.clone()),
        _ => serde_json::from_value(json.clone()).map(|schema| vec![schema]),
    };
    parsed.map_err(|e| Error::decode(e).with_context(format!("OPTIONS {url}")))
}

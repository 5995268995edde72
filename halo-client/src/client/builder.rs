//! [`ClientBuilder`]: a client's settings, and the HTTP client made from them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Url, redirect};

use super::ApprovalSettings;
use super::{Client, Inner, SchemaCache};
use crate::breaker::Breakers;
use crate::{CircuitBreaker, Credential, Credentials, Error, Result, RetryPolicy, Transport};

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
    breaker: CircuitBreaker,
    schema_ttl: Duration,
    concurrency: usize,
    transport: Transport,
    /// What calls held for approval do (set in [`crate::approval`]).
    pub(crate) approvals: ApprovalSettings,
}

impl ClientBuilder {
    /// The defaults, for the API at `base`.
    pub(super) fn new(base: String) -> Self {
        Self {
            base,
            timeout: Some(Duration::from_secs(30)),
            idle_timeout: None,
            connect_timeout: Duration::from_secs(10),
            user_agent: None,
            credentials: Credentials::new(),
            retry: RetryPolicy::new(),
            breaker: CircuitBreaker::new(),
            schema_ttl: Duration::from_secs(60),
            concurrency: 8,
            transport: Transport::Sse,
            approvals: ApprovalSettings::default(),
        }
    }

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

    /// The circuit breaker per host ([`CircuitBreaker::new`] by default: after 5 failed
    /// calls in a row to a host, its calls fail at once for 30 s);
    /// [`CircuitBreaker::off`] to send every call whatever happened before.
    ///
    /// ```
    /// use std::time::Duration;
    /// use halo_client::{CircuitBreaker, Client};
    ///
    /// # fn run() -> halo_client::Result<()> {
    /// let patient = Client::builder("http://127.0.0.1:3000")
    ///     .circuit_breaker(CircuitBreaker::new().failures(10).cool_down(Duration::from_secs(5)))
    ///     .build()?;
    /// let stubborn = Client::builder("http://127.0.0.1:3000")
    ///     .circuit_breaker(CircuitBreaker::off())
    ///     .build()?;
    /// # let _ = (patient, stubborn);
    /// # Ok(()) }
    /// ```
    pub fn circuit_breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = breaker;
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

    /// How streamed calls ([`Client::invoke_stream`], [`Client::call_stream`]) receive their
    /// events: [`Transport::Sse`] by default, [`Transport::WebSocket`] with the feature `ws`.
    /// Either way the stream yields the same events, resumes a cut connection where it was,
    /// and is bounded by the [`stream_idle_timeout`](Self::stream_idle_timeout).
    ///
    /// ```
    /// use halo_client::{Client, Transport};
    ///
    /// # fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000")
    ///     .stream_transport(Transport::Sse)
    ///     .build()?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub fn stream_transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
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
                breakers: Breakers::new(self.breaker),
                timeout: self.timeout,
                idle_timeout: self.idle_timeout.unwrap_or(self.timeout),
                schema_ttl: self.schema_ttl,
                concurrency: self.concurrency,
                transport: self.transport,
                cache: Mutex::new(SchemaCache::default()),
                approvals: self.approvals,
            }),
        })
    }
}

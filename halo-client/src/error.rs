//! The one error type of halo-client.

use std::fmt;
use std::time::Duration;

use halo_protocol::{Problem, ToolOutput};
use reqwest::StatusCode;

use crate::{Approval, ApprovalState, ToolResponse};

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a discovery or a call failed.
///
/// Inspect it with the predicates (`is_status`, `is_timeout`, ...) and accessors; the kinds
/// themselves are private so they can grow. Messages name the method and the URL without its
/// query string or user information, and never contain a credential.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    context: Option<String>,
    source: Option<BoxError>,
    response: Option<ToolResponse>,
    /// Why a host's calls fail at once, for [`Kind::Unavailable`].
    unavailable: Option<Box<Unavailable>>,
    /// The approval of a call held for one, for [`Kind::Refused`] (and an error while
    /// waiting for it).
    approval: Option<Box<Approval>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Builder,
    Credentials,
    /// A credential could not be obtained for now (its token endpoint failed or was busy).
    CredentialsUnavailable,
    Connect,
    Timeout,
    Request,
    Redirect,
    Status(StatusCode),
    Decode,
    Argument,
    NotDescribed,
    /// The host's circuit is open: the call was not sent.
    Unavailable,
    /// The call was held for approval and never ran: its approval was denied, expired or
    /// withdrawn (its state says which).
    Refused,
}

impl Error {
    fn new(kind: Kind) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                context: None,
                source: None,
                response: None,
                unavailable: None,
                approval: None,
            }),
        }
    }

    pub(crate) fn builder(message: impl Into<String>) -> Self {
        Self::new(Kind::Builder).with_context(message)
    }

    pub(crate) fn credentials(message: impl Into<String>) -> Self {
        Self::new(Kind::Credentials).with_context(message)
    }

    /// A credential that could not be obtained for now; the request was not sent, so it may
    /// be tried again whatever its method.
    pub(crate) fn credentials_unavailable(message: impl Into<String>) -> Self {
        Self::new(Kind::CredentialsUnavailable).with_context(message)
    }

    /// Whether this is a [`credentials_unavailable`](Self::credentials_unavailable) error.
    pub(crate) fn is_credentials_unavailable(&self) -> bool {
        self.inner.kind == Kind::CredentialsUnavailable
    }

    pub(crate) fn argument(message: impl Into<String>) -> Self {
        Self::new(Kind::Argument).with_context(message)
    }

    pub(crate) fn not_described(message: impl Into<String>) -> Self {
        Self::new(Kind::NotDescribed).with_context(message)
    }

    /// A request or a response cut short, without a transport error to tell more.
    pub(crate) fn request(message: impl Into<String>) -> Self {
        Self::new(Kind::Request).with_context(message)
    }

    pub(crate) fn timeout() -> Self {
        Self::new(Kind::Timeout)
    }

    pub(crate) fn redirect(message: impl Into<String>) -> Self {
        Self::new(Kind::Redirect).with_context(message)
    }

    pub(crate) fn decode(source: impl Into<BoxError>) -> Self {
        Self::new(Kind::Decode).with_source(source)
    }

    /// A transport error; the URL (which may carry secrets in its query) is dropped.
    pub(crate) fn transport(error: reqwest::Error) -> Self {
        let kind = if error.is_connect() {
            Kind::Connect
        } else if error.is_timeout() {
            Kind::Timeout
        } else if error.is_decode() || error.is_body() {
            Kind::Decode
        } else {
            Kind::Request
        };
        Self::new(kind).with_source(error.without_url())
    }

    /// A call not sent because its host's circuit is open.
    pub(crate) fn unavailable(why: Unavailable) -> Self {
        let mut error = Self::new(Kind::Unavailable);
        error.inner.unavailable = Some(Box::new(why));
        error
    }

    /// A call whose approval was denied, expired or withdrawn (as its state says).
    pub(crate) fn refused(approval: Approval) -> Self {
        Self::new(Kind::Refused).with_approval(approval)
    }

    /// Keeps the approval the call waited for.
    pub(crate) fn with_approval(mut self, approval: Approval) -> Self {
        self.inner.approval = Some(Box::new(approval));
        self
    }

    pub(crate) fn from_response(response: ToolResponse) -> Self {
        let mut error = Self::new(Kind::Status(response.status()));
        error.inner.response = Some(response);
        error
    }

    /// Puts `context` (what was being done: `GET /api/orders`) before the context the error
    /// has (why it failed), keeping both.
    pub(crate) fn with_context(mut self, context: impl Into<String>) -> Self {
        let context = context.into();
        self.inner.context = Some(match self.inner.context.take() {
            Some(why) => format!("{context}: {why}"),
            None => context,
        });
        self
    }

    fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// Whether the server answered with an error status (4xx or 5xx).
    #[must_use]
    pub fn is_status(&self) -> bool {
        matches!(self.inner.kind, Kind::Status(_))
    }

    /// Whether the request timed out.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == Kind::Timeout
    }

    /// Whether the connection could not be made (the request was not sent).
    #[must_use]
    pub fn is_connect(&self) -> bool {
        self.inner.kind == Kind::Connect
    }

    /// Whether a response could not be read or parsed.
    #[must_use]
    pub fn is_decode(&self) -> bool {
        self.inner.kind == Kind::Decode
    }

    /// Whether the client was misconfigured (an invalid base URL, an unusable setting).
    #[must_use]
    pub fn is_builder(&self) -> bool {
        self.inner.kind == Kind::Builder
    }

    /// Whether the arguments of a call cannot be placed (not an object, a missing path
    /// parameter, a nested value where a query or header needs a scalar).
    #[must_use]
    pub fn is_argument(&self) -> bool {
        self.inner.kind == Kind::Argument
    }

    /// Whether the path does not describe the requested method.
    #[must_use]
    pub fn is_not_described(&self) -> bool {
        self.inner.kind == Kind::NotDescribed
    }

    /// Whether a credentials file or map is invalid.
    #[must_use]
    pub fn is_credentials(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Credentials | Kind::CredentialsUnavailable
        )
    }

    /// Whether following redirects failed (too many, or an unusable `Location`).
    #[must_use]
    pub fn is_redirect(&self) -> bool {
        self.inner.kind == Kind::Redirect
    }

    /// Whether the call was not sent because the host's last calls failed: its circuit
    /// breaker ([`CircuitBreaker`](crate::CircuitBreaker)) is open, and calls to that host fail
    /// at once until [`retry_in`](Self::retry_in) has passed.
    ///
    /// ```
    /// # async fn run(client: halo_client::Client) {
    /// use halo_client::Method;
    ///
    /// match client.invoke("/api/books", Method::GET, serde_json::json!({})).await {
    ///     Err(error) if error.is_unavailable() => {
    ///         let wait = error.retry_in().unwrap_or_default();
    ///         eprintln!("the API is down; not calling it for {} s", wait.as_secs());
    ///     }
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        self.inner.kind == Kind::Unavailable
    }

    /// For [`is_unavailable`](Self::is_unavailable) errors, how long (from when the error was
    /// made) until the client lets a trial call through to the host; zero while another
    /// call is that trial.
    #[must_use]
    pub fn retry_in(&self) -> Option<Duration> {
        self.inner.unavailable.as_ref().map(|why| why.retry_in)
    }

    /// Whether the call was held for approval and denied: it never ran.
    /// [`approval`](Self::approval) says who denied it ([`Approval::decided_by`]) and why
    /// ([`Approval::reason`]).
    ///
    /// ```
    /// # async fn run(client: halo_client::Client) {
    /// use halo_client::Method;
    /// use serde_json::json;
    ///
    /// let refund = json!({"id": "ch_1", "reason": "returned"});
    /// match client.invoke("/api/payments/{id}/refund", Method::POST, refund).await {
    ///     Err(error) if error.is_denied() => {
    ///         let approval = error.approval().expect("a denied call has its approval");
    ///         eprintln!("denied by {:?}: {:?}", approval.decided_by, approval.reason);
    ///     }
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn is_denied(&self) -> bool {
        self.refusal() == Some(ApprovalState::Denied)
    }

    /// Whether the call was held for approval and nobody decided before it expired (which
    /// counts as denied): it never ran. [`approval`](Self::approval) has it.
    #[must_use]
    pub fn is_approval_expired(&self) -> bool {
        self.refusal() == Some(ApprovalState::Expired)
    }

    /// Whether the call was held for approval and its caller withdrew it before anyone
    /// decided ([`Client::withdraw`](crate::Client::withdraw)): it never ran.
    /// [`approval`](Self::approval) has it ([`Approval::decided_by`]: who withdrew it).
    ///
    /// ```
    /// # async fn run(client: halo_client::Client, approval: halo_client::Approval) {
    /// match client.wait_for_approval(&approval).await {
    ///     Err(error) if error.is_approval_cancelled() => eprintln!("withdrawn: not run"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn is_approval_cancelled(&self) -> bool {
        self.refusal() == Some(ApprovalState::Cancelled)
    }

    /// The state of the approval of a call that was held and never ran.
    fn refusal(&self) -> Option<ApprovalState> {
        let approval = self
            .inner
            .approval
            .as_ref()
            .filter(|_| self.inner.kind == Kind::Refused);
        approval.map(|approval| approval.state)
    }

    /// The approval a call was held for: for [`is_denied`](Self::is_denied),
    /// [`is_approval_expired`](Self::is_approval_expired) and
    /// [`is_approval_cancelled`](Self::is_approval_cancelled) errors, and for an error while
    /// waiting for it (a timeout, a failed read), with which the wait can go on
    /// ([`Client::wait_for_approval`](crate::Client::wait_for_approval)).
    #[must_use]
    pub fn approval(&self) -> Option<&Approval> {
        self.inner.approval.as_deref()
    }

    /// The status the server answered with, for [`is_status`](Self::is_status) errors.
    #[must_use]
    pub fn status(&self) -> Option<StatusCode> {
        match self.inner.kind {
            Kind::Status(status) => Some(status),
            _ => None,
        }
    }

    /// The problem details body (`application/problem+json`) of an error response, so an
    /// agent can show the model what was wrong.
    #[must_use]
    pub fn problem(&self) -> Option<Problem> {
        let response = self.inner.response.as_ref()?;
        serde_json::from_value(response.json()?.clone()).ok()
    }

    /// The whole error response (status, headers, body), for [`is_status`](Self::is_status)
    /// errors.
    #[must_use]
    pub fn response(&self) -> Option<&ToolResponse> {
        self.inner.response.as_ref()
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("halo_client::Error");
        debug.field("kind", &self.inner.kind);
        if let Some(context) = &self.inner.context {
            debug.field("context", context);
        }
        if let Some(source) = &self.inner.source {
            debug.field("source", source);
        }
        debug.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.inner.kind {
            Kind::Builder => "invalid client configuration",
            Kind::Credentials => "invalid credentials",
            Kind::CredentialsUnavailable => "credentials unavailable",
            Kind::Connect => "could not connect",
            Kind::Timeout => "timed out",
            Kind::Request => "request failed",
            Kind::Redirect => "redirect failed",
            Kind::Status(_) => "error response",
            Kind::Decode => "could not read the response",
            Kind::Argument => "invalid arguments",
            Kind::NotDescribed => "not described",
            Kind::Unavailable => "unavailable",
            Kind::Refused if self.is_denied() => "denied",
            Kind::Refused if self.is_approval_cancelled() => "approval withdrawn",
            Kind::Refused => "approval expired",
        };
        f.write_str(what)?;
        if let Some(context) = &self.inner.context {
            write!(f, ": {context}")?;
        }
        if let Kind::Status(status) = self.inner.kind {
            write!(f, ": {status}")?;
            if let Some(problem) = self.problem() {
                match (&problem.detail, problem.title.is_empty()) {
                    (Some(detail), _) => write!(f, ": {detail}")?,
                    (None, false) => write!(f, ": {}", problem.title)?,
                    (None, true) => {}
                }
            }
        }
        if let Some(approval) = &self.inner.approval
            && self.inner.kind == Kind::Refused
        {
            if self.is_denied() {
                write!(f, ": approval {} was denied", approval.id)?;
                if let Some(by) = &approval.decided_by {
                    write!(f, " by {by}")?;
                }
                if let Some(reason) = &approval.reason {
                    write!(f, ": {reason}")?;
                }
            } else if self.is_approval_cancelled() {
                write!(f, ": approval {} was withdrawn", approval.id)?;
                if let Some(by) = &approval.decided_by {
                    write!(f, " by {by}")?;
                }
            } else {
                write!(
                    f,
                    ": approval {} was not decided before {}",
                    approval.id, approval.expires_at
                )?;
            }
        }
        if let Some(why) = &self.inner.unavailable {
            write!(
                f,
                ": the {} to {} failed; {}",
                why.calls(),
                why.origin,
                why.when()
            )?;
        }
        if let Some(source) = &self.inner.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

/// A failed call as a tool's output for a model or an MCP client: an error response keeps
/// its status and body (the problem details); arguments that cannot be placed are a `400`
/// problem the model can correct; a host whose circuit is open
/// ([`Error::is_unavailable`]) is one line, `the API at https://api.example.com is
/// unavailable (its last 5 calls failed); try again in 30 s`; anything else is a failure with
/// this error's message, which never carries a credential.
///
/// ```
/// # async fn run(client: halo_client::Client, schema: halo_protocol::ToolSchema) {
/// use halo_protocol::ToolOutput;
///
/// let output = match client.call(&schema, serde_json::json!({})).await {
///     Ok(response) => ToolOutput::from(&response),
///     Err(error) => ToolOutput::from(&error),
/// };
/// # let _ = output;
/// # }
/// ```
impl From<&Error> for ToolOutput {
    fn from(error: &Error) -> Self {
        if let Some(why) = &error.inner.unavailable {
            return Self::failure(format!(
                "the API at {} is unavailable (its {} failed); {}",
                why.origin,
                why.calls(),
                why.when()
            ));
        }
        match error.response() {
            Some(response) => Self::from(response),
            None if error.is_argument() => {
                Self::problem(Problem::new(400).with_detail(error.to_string()))
            }
            // What a server answers a repeat of a denied call with.
            None if error.refusal().is_some() => {
                Self::problem(Problem::new(403).with_detail(error.to_string()))
            }
            None => Self::failure(error.to_string()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref().map(|source| source as _)
    }
}

/// Why calls to a host fail at once: what an [`Error::is_unavailable`] error holds.
#[derive(Debug, Clone)]
pub(crate) struct Unavailable {
    /// `https://api.example.com`: scheme, host and port, never a credential.
    pub(crate) origin: String,
    /// The failed calls in a row that opened the circuit.
    pub(crate) failures: u32,
    /// How long until a trial call; zero while one is under way.
    pub(crate) retry_in: Duration,
}

impl Unavailable {
    /// `last call` or `last 5 calls`.
    pub(crate) fn calls(&self) -> String {
        match self.failures {
            1 => "last call".to_owned(),
            n => format!("last {n} calls"),
        }
    }

    /// `try again in 30 s`, or that a trial call is under way.
    pub(crate) fn when(&self) -> String {
        if self.retry_in.is_zero() {
            return "a trial call is under way, try again in a moment".to_owned();
        }
        let seconds = self.retry_in.as_secs() + u64::from(self.retry_in.subsec_nanos() > 0);
        format!("try again in {seconds} s")
    }
}

//! Cancelling a running call: `DELETE /.well-known/halo/calls/{call_id}` at the API's root.
//!
//! A streamed call has the id the server gave it ([`ToolStream::call_id`]); a call without a
//! stream is cancellable only when the client names it when sending it
//! ([`Client::invoke_cancellable`]), since its caller learns nothing of it before the answer.

use std::fmt;

use halo_protocol::{CALL_ID_HEADER, ToolSchema, is_call_id};
use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{Client, Prepared};
use crate::{Error, Result, ToolResponse};

#[cfg(doc)]
use crate::ToolStream;

use halo_protocol::CALLS_PATH as PREFIX;

/// The id of a running call, which a cancel request names: 1 to 128 letters, digits, `-`,
/// `.`, `_` or `~` (characters a URL path carries as they are).
///
/// ```
/// use halo_client::CallId;
///
/// let id = CallId::new("report-2026-q4").unwrap();
/// assert_eq!(id.as_str(), "report-2026-q4");
/// assert!(CallId::new("not/an id").is_err());
/// assert_ne!(CallId::random(), CallId::random());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallId(String);

impl CallId {
    /// An id of your choosing.
    ///
    /// # Errors
    /// [`Error::is_argument`] when it is empty, longer than 128 characters or has a
    /// character other than a letter, a digit, `-`, `.`, `_` or `~`.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        if !is_call_id(&id) {
            return Err(Error::argument(
                "a call id is 1 to 128 letters, digits, '-', '.', '_' or '~'",
            ));
        }
        Ok(Self(id))
    }

    /// A new id nobody can guess (a random UUID), as a call without credentials needs: any
    /// anonymous client that knows it may cancel the call.
    #[must_use]
    pub fn random() -> Self {
        Self(format!("k-{}", uuid::Uuid::new_v4().simple()))
    }

    /// The id.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `request` named with this id (its `Halo-Call-Id` header).
    fn name(&self, mut request: Prepared) -> Prepared {
        let header = HeaderValue::try_from(self.0.as_str()).expect("a call id is a header value");
        request.headers.insert(CALL_ID_HEADER, header);
        request
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a cancel request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The server stopped the call (now, or for an earlier cancel request): its handler was
    /// dropped, and the call ends with a `409` problem (a stream's `tool_error`).
    Cancelled,
    /// The call had already ended on its own; its result stands.
    AlreadyEnded,
}

impl Client {
    /// Calls the `method` operation at `url` as [`invoke`](Self::invoke) does, naming the
    /// call `id` (the `Halo-Call-Id` request header) so that it can be cancelled while it
    /// runs, from anywhere, with [`cancel`](Self::cancel).
    ///
    /// ```no_run
    /// use halo_client::{CallId, Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::new("http://127.0.0.1:3000")?;
    /// let id = CallId::random();
    /// let report = client.invoke_cancellable("/api/reports", Method::POST, json!({}), &id);
    /// let give_up = async {
    ///     tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    ///     client.cancel(&id).await
    /// };
    /// tokio::select! {
    ///     answer = report => println!("{}", answer?.to_value()),
    ///     cancelled = give_up => println!("{:?}", cancelled?),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke); a call cancelled while it runs is an
    /// [`Error::is_status`] error with status `409`, and so is one sent while a call of
    /// yours with the same id still runs.
    pub async fn invoke_cancellable(
        &self,
        url: &str,
        method: Method,
        args: Value,
        id: &CallId,
    ) -> Result<ToolResponse> {
        let request = self.invocation(url, method, args).await?;
        self.execute(&id.name(request)).await
    }

    /// Calls the operation a schema describes, at its `call.url`, naming the call `id` as
    /// [`invoke_cancellable`](Self::invoke_cancellable) does.
    ///
    /// # Errors
    /// As [`invoke_cancellable`](Self::invoke_cancellable).
    pub async fn call_cancellable(
        &self,
        schema: &ToolSchema,
        args: Value,
        id: &CallId,
    ) -> Result<ToolResponse> {
        self.execute(&id.name(self.calling(schema, args)?)).await
    }

    /// Cancels the running call `id`: a streamed call's ([`ToolStream::call_id`]) or one
    /// named with [`invoke_cancellable`](Self::invoke_cancellable). Only the caller that
    /// started the call may cancel it (or a caller holding the server's cancel scope).
    ///
    /// # Errors
    /// [`Error::is_status`] with `404` when no call of yours with this id runs (unknown,
    /// another caller's, or a named call that has ended), and transport errors.
    pub async fn cancel(&self, id: &CallId) -> Result<CancelOutcome> {
        let url = self.resolve(&format!("{PREFIX}{id}"))?;
        // DELETE is idempotent (safe to repeat): a repeat finds the call cancelled.
        let request = Prepared::endpoint(Method::DELETE, url, None, true, self.retry_policy());
        match self.execute(&request).await {
            Ok(_) => Ok(CancelOutcome::Cancelled),
            Err(error) if error.status() == Some(StatusCode::CONFLICT) => {
                Ok(CancelOutcome::AlreadyEnded)
            }
            Err(error) => Err(error),
        }
    }
}

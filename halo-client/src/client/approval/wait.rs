//! Waiting for a decision: a call answered `202 Accepted` with a `Location` among the
//! approvals is read again there until it is decided, and then answers as the call would
//! have.
//!
//! How often: as the server's `Retry-After` asks, else after 0.5 s, doubling to 5 s; a
//! person takes seconds to minutes to decide, and 5 s is as long as a caller should wait
//! for a decision already taken. How long: the approval's own lifetime (`expires_at` less
//! `requested_at`, both on the server's clock, so a skewed local clock changes nothing) and
//! a margin, and once approved a while more for the call to run. A read that fails for a
//! while (the server restarting, a dropped connection) is tried again within that bound,
//! since giving up would leave a call that may still run. The request itself is never sent
//! again: the server holds it.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::{Method, StatusCode, Url};
use tokio::time::Instant;

use super::decide::{decode, path};
use crate::approval::{APPROVALS_PATH, Approval, ApprovalState};
use crate::client::{Prepared, checked};
use crate::{Client, ClientBuilder, Error, Result, ToolResponse};

/// The first pause between two reads of a pending approval.
const FIRST_DELAY: Duration = Duration::from_millis(500);

/// The longest pause between two reads, unless the server's `Retry-After` asks for more.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// The bounds put on a server's `Retry-After`.
const RETRY_AFTER_RANGE: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(60));

/// The lifetime assumed for an approval whose times cannot be read (the spec's default).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The longest lifetime believed: a longer wait is a server's mistake.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// How long past its lifetime an approval is read: the server's expiry runs when it is next
/// looked at, and clocks tick apart.
const MARGIN: Duration = Duration::from_secs(60);

/// Once approved, how long the call may take to run.
const RUN_WAIT: Duration = Duration::from_secs(10 * 60);

/// A hook told of each call held for approval.
type Hook = Arc<dyn Fn(&Approval) + Send + Sync>;

/// What a client does with calls held for approval.
#[derive(Clone)]
pub(crate) struct ApprovalSettings {
    /// Whether a held call waits for the decision (else its `202` is the answer).
    wait: bool,
    /// Told of every held call, before the wait.
    on_pending: Option<Hook>,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        Self {
            wait: true,
            on_pending: None,
        }
    }
}

impl fmt::Debug for ApprovalSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalSettings")
            .field("wait", &self.wait)
            .field(
                "on_pending",
                &self.on_pending.as_ref().map(|_| "Fn(&Approval)"),
            )
            .finish()
    }
}

impl ClientBuilder {
    /// Calls `hook` with the approval of each call held for approval (`202 Accepted`), as
    /// soon as the server holds it and before the client waits for the decision: to tell a
    /// person which approval to look at.
    ///
    /// ```
    /// use halo_client::Client;
    ///
    /// # fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000")
    ///     .on_approval_pending(|approval| {
    ///         eprintln!("approval {} pending (tool {})", approval.id, approval.tool);
    ///     })
    ///     .build()?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub fn on_approval_pending(mut self, hook: impl Fn(&Approval) + Send + Sync + 'static) -> Self {
        self.approvals.on_pending = Some(Arc::new(hook));
        self
    }

    /// Whether a call held for approval waits for the decision (`true`, the default: the
    /// call then answers as it would have, or fails with [`Error::is_denied`],
    /// [`Error::is_approval_expired`] or [`Error::is_approval_cancelled`]) or answers its `202 Accepted` at once (`false`: read
    /// it with [`Approval::from_response`], wait later with [`Client::wait_for_approval`]).
    ///
    /// ```
    /// use halo_client::Client;
    ///
    /// # fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000").await_approvals(false).build()?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub fn await_approvals(mut self, wait: bool) -> Self {
        self.approvals.wait = wait;
        self
    }
}

impl Client {
    /// Waits for the decision on `approval` (from a `202`, a stream's `approval_pending`,
    /// or [`Client::approval`]) and answers as its call does: the answer it gave once
    /// approved, an error when it was denied, expired or withdrawn. The call is never sent
    /// again.
    ///
    /// ```no_run
    /// use halo_client::{Approval, Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000").await_approvals(false).build()?;
    /// let answer = client
    ///     .invoke("/api/payments/{id}/refund", Method::POST, json!({"id": "ch_1", "reason": "returned"}))
    ///     .await?;
    /// if let Some(approval) = Approval::from_response(&answer) {
    ///     println!("waiting for approval {}", approval.id);
    ///     match client.wait_for_approval(&approval).await {
    ///         Ok(refund) => println!("{}", refund.to_value()),
    ///         Err(error) if error.is_denied() => {
    ///             let denied = error.approval().expect("the denied approval");
    ///             println!("denied by {:?}: {:?}", denied.decided_by, denied.reason);
    ///         }
    ///         Err(error) => return Err(error),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_denied`], [`Error::is_approval_expired`] or
    /// [`Error::is_approval_cancelled`] (with [`Error::approval`] saying who decided and
    /// why); as [`Client::invoke`] for the
    /// answer of an approved call that failed (an [`Error::is_status`] error with its status
    /// and problem); [`Error::is_timeout`] when nothing was decided within the approval's
    /// lifetime and a margin; the error of a read the server refused (`404` once it no longer
    /// keeps the approval). Each of these but the call's own answer carries the approval.
    pub async fn wait_for_approval(&self, approval: &Approval) -> Result<ToolResponse> {
        let url = self.resolve(&path(&approval.id, None)?)?;
        let what = match &approval.call {
            // The path without its query, which may carry secrets.
            Some(call) => format!(
                "{} {}",
                call.method,
                call.url.split('?').next().unwrap_or("")
            ),
            None => format!("the call of {}", approval.tool),
        };
        self.wait_at(url, approval.clone(), None, &what).await
    }

    /// The answer of a call: a `202` naming an approval of the same origin is told to the
    /// hook and, unless the client does not wait, waited for.
    pub(crate) async fn settle(
        &self,
        request: &Prepared,
        response: ToolResponse,
    ) -> Result<ToolResponse> {
        let Some(url) = held_at(&request.url, &response) else {
            return Ok(response);
        };
        let what = request.label().to_string();
        let approval = Approval::from_response(&response).ok_or_else(|| {
            Error::decode("the 202 of a call held for approval does not carry the approval")
                .with_context(what.clone())
        })?;
        let settings = self.approval_settings();
        if let Some(hook) = &settings.on_pending {
            hook(&approval);
        }
        if !settings.wait {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        self.wait_at(url, approval, retry_after, &what).await
    }

    /// Reads the approval at `url` until it is decided; `what` names the call in errors.
    async fn wait_at(
        &self,
        url: Url,
        mut approval: Approval,
        mut retry_after: Option<Duration>,
        what: &str,
    ) -> Result<ToolResponse> {
        let lifetime = approval
            .lifetime()
            .unwrap_or(DEFAULT_LIFETIME)
            .min(MAX_LIFETIME);
        let mut deadline = Instant::now() + lifetime + MARGIN;
        let mut running = false;
        let mut delay = FIRST_DELAY;
        let read = Prepared::endpoint(Method::GET, url, None, true, self.retry_policy());
        loop {
            match approval.state {
                ApprovalState::Pending => {}
                ApprovalState::Approved => {
                    if let Some(response) = approval.to_response() {
                        return checked(response, &what);
                    }
                    if approval.response.is_some() {
                        return Err(Error::decode(format!(
                            "the approved call's status, {}, is not an HTTP status",
                            approval.response.as_ref().map_or(0, |r| r.status)
                        ))
                        .with_context(what.to_owned())
                        .with_approval(approval));
                    }
                    // Approved and running: its answer comes when it has run.
                    if !running {
                        running = true;
                        deadline = deadline.max(Instant::now() + RUN_WAIT);
                    }
                }
                ApprovalState::Denied | ApprovalState::Expired | ApprovalState::Cancelled => {
                    return Err(Error::refused(approval).with_context(what.to_owned()));
                }
                _ => {
                    return Err(Error::decode(format!(
                        "approval {} is in a state this client does not know",
                        approval.id
                    ))
                    .with_context(what.to_owned())
                    .with_approval(approval));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                let waited = if running { "run" } else { "decided" };
                return Err(Error::timeout()
                    .with_context(format!(
                        "{what}: approval {} was not {waited} in time",
                        approval.id
                    ))
                    .with_approval(approval));
            }
            let pause = retry_after.take().map_or(delay, |asked| {
                asked.clamp(RETRY_AFTER_RANGE.0, RETRY_AFTER_RANGE.1)
            });
            delay = (delay * 2).min(MAX_DELAY);
            tokio::time::sleep(pause.min(deadline - now)).await;
            match self.fetch(&read).await {
                Ok(response) => {
                    retry_after = self::retry_after(response.headers());
                    approval = decode(&response, "the approval").map_err(|error| {
                        error
                            .with_context(what.to_owned())
                            .with_approval(approval.clone())
                    })?;
                }
                Err(error) if passing(&error) => {
                    tracing::warn!(
                        target: "halo_client::approval",
                        approval = %approval.id,
                        reason = %error,
                        "reading the approval failed; reading it again"
                    );
                    retry_after = error
                        .response()
                        .and_then(|r| self::retry_after(r.headers()));
                }
                Err(error) => {
                    return Err(error
                        .with_context(format!("{what}: reading approval {}", approval.id))
                        .with_approval(approval));
                }
            }
        }
    }
}

/// Where a call's answer says it is held: a `202` whose `Location`, of the request's own
/// origin, is an approval's; `None` for any other answer.
fn held_at(request: &Url, response: &ToolResponse) -> Option<Url> {
    if response.status() != StatusCode::ACCEPTED {
        return None;
    }
    let location = response.headers().get(LOCATION)?.to_str().ok()?;
    let url = request.join(location).ok()?;
    let prefix = format!("{APPROVALS_PATH}/");
    let held = url.origin() == request.origin()
        && url
            .path()
            .find(&prefix)
            .is_some_and(|at| url.path().len() > at + prefix.len());
    held.then_some(url)
}

/// A failed read worth trying again: the server unreachable, slow, overloaded, failing or
/// dropping connections; not an answer that will not change (a `404`, a body that is not an
/// approval) nor a client that cannot send.
fn passing(error: &Error) -> bool {
    match error.status() {
        Some(status) => crate::retry::Failure::is_retryable_status(status),
        None => {
            !(error.is_decode()
                || error.is_redirect()
                || error.is_credentials()
                || error.is_argument()
                || error.is_builder())
        }
    }
}

/// `Retry-After` as a delay from now: seconds, or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    crate::retry::retry_after(headers, SystemTime::now())
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;
    use reqwest::header::RETRY_AFTER;

    fn answer(status: u16, location: Option<&'static str>) -> ToolResponse {
        let mut headers = HeaderMap::new();
        if let Some(location) = location {
            headers.insert(LOCATION, HeaderValue::from_static(location));
        }
        ToolResponse::new(StatusCode::from_u16(status).unwrap(), headers, b"")
    }

    #[test]
    fn only_a_202_naming_an_approval_of_the_same_origin_is_held() {
        let request = Url::parse("http://api.test:3000/api/payments/ch_1/refund").unwrap();
        let held = held_at(
            &request,
            &answer(202, Some("/.well-known/halo/approvals/a1")),
        );
        assert_eq!(
            held.unwrap().as_str(),
            "http://api.test:3000/.well-known/halo/approvals/a1"
        );
        let absolute = answer(
            202,
            Some("http://api.test:3000/.well-known/halo/approvals/a1"),
        );
        assert!(held_at(&request, &absolute).is_some());
        for other in [
            answer(201, Some("/.well-known/halo/approvals/a1")),
            answer(202, None),
            answer(202, Some("/jobs/1")),
            answer(202, Some("/.well-known/halo/approvals/")),
            answer(
                202,
                Some("http://elsewhere.test/.well-known/halo/approvals/a1"),
            ),
        ] {
            assert!(held_at(&request, &other).is_none(), "{other:?}");
        }
    }

    #[test]
    fn retry_after_in_seconds_or_a_date() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }
}

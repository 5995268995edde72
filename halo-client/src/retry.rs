//! Retries that never duplicate a side effect.

use std::time::{Duration, SystemTime};

use halo_protocol::{RetryDelays, RetrySchedule};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// When and how often to retry.
///
/// Connection failures and requests the connection closed before they were written (never
/// sent either way) are always retried. A request that may have reached the server (a
/// timeout, a reset, a `408`, `429` or `5xx`) is retried only when repeating it is safe: its
/// method is idempotent ([`halo_protocol::is_idempotent_method`]), its schema declares
/// `limits.idempotent`, or it carries an `Idempotency-Key`. A tool whose schema says
/// `resilience.retry: false` is never retried.
///
/// Delays grow exponentially with full jitter (a uniformly random share of the current
/// step), never shorter than a server's `Retry-After`, and stop after
/// [`max_attempts`](Self::max_attempts) or when the delays would exceed
/// [`max_elapsed`](Self::max_elapsed): halo-protocol's [`RetrySchedule`], which
/// halo-agent's model requests follow too.
///
/// ```
/// use std::time::Duration;
/// use halo_client::RetryPolicy;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(5)
///     .min_delay(Duration::from_millis(200))
///     .max_elapsed(Duration::from_secs(20));
/// # let _ = policy;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Default)]
#[must_use]
pub struct RetryPolicy {
    /// The delays: halo-protocol's, shared with halo-agent's model requests.
    schedule: RetrySchedule,
}

impl RetryPolicy {
    /// Four attempts, delays from 100 ms doubling up to 10 s, at most 30 s of waiting.
    pub fn new() -> Self {
        Self::default()
    }

    /// One attempt, no retries.
    pub fn none() -> Self {
        Self::default().max_attempts(1)
    }

    /// How many attempts in all, the first included (at least one).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.schedule = self.schedule.with_max_attempts(attempts);
        self
    }

    /// The first delay's upper bound.
    pub fn min_delay(mut self, delay: Duration) -> Self {
        self.schedule = self.schedule.with_min_delay(delay);
        self
    }

    /// The largest delay between two attempts (a `Retry-After` may ask for more, within
    /// [`max_elapsed`](Self::max_elapsed)).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.schedule = self.schedule.with_max_delay(delay);
        self
    }

    /// The most time spent waiting between attempts, all delays together.
    pub fn max_elapsed(mut self, elapsed: Duration) -> Self {
        self.schedule = self.schedule.with_max_elapsed(elapsed);
        self
    }

    /// The delays of this policy, one per retry.
    pub(crate) fn schedule(self) -> RetryDelays {
        self.schedule.delays()
    }

    /// Runs `attempt` until it succeeds, fails for good, or the policy is spent; `what`
    /// names the request in retry events (only formatted when one happens).
    ///
    /// The loop is written out so that the first attempt, the one that almost always
    /// succeeds, costs nothing beyond itself.
    pub(crate) async fn run<T, F, Fut>(
        self,
        safe: bool,
        what: &(dyn std::fmt::Display + Sync),
        mut attempt: F,
    ) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut schedule = self.schedule();
        loop {
            let failure = match attempt().await {
                Ok(value) => return Ok(value),
                Err(failure) if !failure.is_retryable(safe) => return Err(failure),
                Err(failure) => failure,
            };
            let Some(delay) = schedule.next_delay(failure.retry_after()) else {
                return Err(failure);
            };
            tracing::warn!(
                target: "halo_client::retry",
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                reason = %failure.reason(),
                "retrying {what}"
            );
            tokio::time::sleep(delay).await;
        }
    }
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.schedule.max_attempts())
            .field("min_delay", &self.schedule.min_delay())
            .field("max_delay", &self.schedule.max_delay())
            .field("max_elapsed", &self.schedule.max_elapsed())
            .finish()
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No response: the connection failed, timed out or was reset.
    Transport(reqwest::Error),
    /// A response with a status that may be worth retrying; the rest is decided above.
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
        response: crate::ToolResponse,
    },
    /// The client's timeout ran out; the request may have reached the server.
    TimedOut,
    /// The request was not sent: its credential could not be obtained for now.
    NotSent(crate::Error),
    /// Anything retrying cannot fix.
    Fatal(crate::Error),
}

impl Failure {
    /// A response worth retrying (408, 429, 5xx), with its `Retry-After`.
    pub(crate) fn status(response: crate::ToolResponse) -> Self {
        Self::Status {
            status: response.status(),
            retry_after: retry_after(response.headers(), SystemTime::now()),
            response,
        }
    }

    /// A credential that could not be applied: the request was not sent, and may be when
    /// the credential can be had again.
    pub(crate) fn credential(error: crate::Error) -> Self {
        if error.is_credentials_unavailable() {
            Self::NotSent(error)
        } else {
            Self::Fatal(error)
        }
    }

    pub(crate) fn is_retryable_status(status: StatusCode) -> bool {
        matches!(status.as_u16(), 408 | 429) || status.is_server_error()
    }

    fn is_retryable(&self, safe: bool) -> bool {
        match self {
            Self::Transport(error) => error.is_connect() || never_sent(error) || safe,
            Self::Status { .. } | Self::TimedOut => safe,
            Self::NotSent(_) => true,
            Self::Fatal(_) => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn reason(&self) -> String {
        match self {
            Self::Transport(error) if error.is_connect() => "connection failed".to_owned(),
            Self::Transport(error) if error.is_timeout() => "timed out".to_owned(),
            Self::TimedOut => "timed out".to_owned(),
            Self::Transport(_) => "connection lost".to_owned(),
            Self::Status { status, .. } => status.to_string(),
            Self::NotSent(error) | Self::Fatal(error) => error.to_string(),
        }
    }

    pub(crate) fn into_error(self) -> crate::Error {
        match self {
            Self::Transport(error) => crate::Error::transport(error),
            Self::Status { response, .. } => crate::Error::from_response(response),
            Self::TimedOut => crate::Error::timeout(),
            Self::NotSent(error) | Self::Fatal(error) => error,
        }
    }
}

/// Whether the request was never written: hyper cancels a request whose connection closed
/// before it could be sent, so the server cannot have acted on it.
fn never_sent(error: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_canceled)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// `Retry-After` as a delay: seconds, or an HTTP date (a date in the past means now).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 12:00:00 GMT").unwrap();
        assert_eq!(
            retry_after(&headers("3"), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after(&headers(" 0 "), now), Some(Duration::ZERO));
        assert_eq!(
            retry_after(&headers("Sun, 29 Nov 2026 12:00:07 GMT"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers("Sun, 29 Nov 2026 11:00:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("soon"), now), None);
        assert_eq!(retry_after(&headers("-1"), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn retryable_statuses() {
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(
                Failure::is_retryable_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
        for code in [400, 401, 403, 404, 409, 422] {
            assert!(
                !Failure::is_retryable_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
    }
}

//! A circuit breaker per host: an API that keeps failing is left alone for a while, and
//! its calls fail at once with an error that says so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use reqwest::Url;
use tokio::time::Instant;

use crate::Error;
use crate::error::Unavailable;
use crate::retry::Failure;

/// How many hosts the breaker keeps a record of; past it, hosts that are not open are
/// forgotten first.
const MAX_HOSTS: usize = 1024;

/// A circuit breaker per host: after [`failures`](Self::failures) calls in a row to one
/// host have failed, the client stops calling that host for a
/// [`cool_down`](Self::cool_down), and its calls fail at once, without any network I/O,
/// with an [`Error::is_unavailable`] error that names the host and says when it will be
/// tried again.
///
/// A host is the scheme, host and port of the URL actually called (after redirects), so
/// one API that is down does not stop the calls to another. A call counts once, after its
/// retries ([`RetryPolicy`](crate::RetryPolicy)): it failed when its last attempt could
/// not connect, timed out, lost its connection, or was answered `5xx` without
/// `Retry-After`. Any other answer shows the host is there and resets its count: a `4xx`,
/// and the server asking to wait (`429`, or a `503` with `Retry-After`, as halo-axum
/// answers for one operation whose own circuit is open). A call that is
/// never sent (its credential could not be had, its arguments are wrong) or is dropped
/// counts neither way.
///
/// After the cool-down, one call is let through as a trial (the circuit is half-open) while
/// the others still fail at once: its success closes the circuit, its failure opens it for
/// another cool-down, and a trial dropped before it ends lets the next call try. Discovery,
/// descriptions and the opening of an event stream ([`Client::invoke_stream`]) are calls like
/// any other; a stream already open is never cut, and its reconnections are not counted.
///
/// **On by default** (5 failures, 30 s): a failure counts only once retries are spent, and
/// only for what says a host is down, so a working API never trips it, while the programs
/// that call an API for a long time without anyone watching (an agent loop, the MCP bridge,
/// a long-running command) stop hammering one that is not. A program that must never fail
/// fast turns it [`off`](Self::off).
///
/// While every host is well, the breaker costs a call two atomic reads and no lock: it keeps
/// a record only of the hosts that have failed (at most 1,024).
///
/// [`Client::invoke_stream`]: crate::Client::invoke_stream
///
/// ```
/// use std::time::Duration;
/// use halo_client::{CircuitBreaker, Client, RetryPolicy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> halo_client::Result<()> {
/// # let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
/// // An API that is down.
/// let client = Client::builder(format!("http://127.0.0.1:{port}"))
///     .retry(RetryPolicy::none())
///     .circuit_breaker(CircuitBreaker::new().failures(2).cool_down(Duration::from_secs(10)))
///     .build()?;
/// for _ in 0..2 {
///     assert!(client.discover(&[]).await.unwrap_err().is_connect());
/// }
/// // Now the client does not try: it says when it will.
/// let error = client.discover(&[]).await.unwrap_err();
/// assert!(error.is_unavailable());
/// assert!(error.retry_in().unwrap() <= Duration::from_secs(10));
/// assert!(error.to_string().ends_with("failed; try again in 10 s"));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct CircuitBreaker {
    /// Failed calls in a row that open the circuit; 0 when off.
    failures: u32,
    cool_down: Duration,
}

impl CircuitBreaker {
    /// Opens after 5 failed calls in a row, for 30 s.
    pub fn new() -> Self {
        Self {
            failures: 5,
            cool_down: Duration::from_secs(30),
        }
    }

    /// Never opens: every call is sent.
    pub fn off() -> Self {
        Self {
            failures: 0,
            ..Self::new()
        }
    }

    /// How many failed calls in a row to one host open its circuit (at least one).
    pub fn failures(mut self, failures: u32) -> Self {
        self.failures = failures.max(1);
        self
    }

    /// How long an open circuit fails calls at once before it lets a trial call through.
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = cool_down;
        self
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.failures == 0 {
            return f.write_str("CircuitBreaker(off)");
        }
        f.debug_struct("CircuitBreaker")
            .field("failures", &self.failures)
            .field("cool_down", &self.cool_down)
            .finish()
    }
}

/// The state of the hosts' circuits: only the hosts that have failed are kept.
#[derive(Debug)]
pub(crate) struct Breakers {
    settings: CircuitBreaker,
    hosts: Mutex<HashMap<String, Host, foldhash::fast::RandomState>>,
    /// How many hosts `hosts` holds, read without its lock: while none has failed, a call
    /// takes no lock at all.
    tracked: AtomicUsize,
}

/// The hosts' map, which keeps [`Breakers::tracked`] up to date when it is let go.
struct Hosts<'a> {
    map: MutexGuard<'a, HashMap<String, Host, foldhash::fast::RandomState>>,
    tracked: &'a AtomicUsize,
}

impl Drop for Hosts<'_> {
    fn drop(&mut self) {
        self.tracked.store(self.map.len(), Ordering::Relaxed);
    }
}

/// One host that has failed.
#[derive(Debug)]
struct Host {
    /// Failed calls in a row.
    failures: u32,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Calls go through; the failures are counted.
    Closed,
    /// Calls fail at once until `until`; after it, the next call is a trial.
    Open { until: Instant },
    /// A trial call is under way: others fail at once.
    Trial,
}

/// How a call ended, for its host's circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The host answered (anything but a `5xx` without `Retry-After`).
    Answered,
    /// No connection, a timeout, a lost connection or a `5xx` without `Retry-After`.
    Failed,
    /// Not sent, or failed for a reason of the client's own.
    Neither,
}

impl Verdict {
    /// The verdict on a call's outcome, after its retries.
    pub(crate) fn of<T>(outcome: &Result<T, Failure>) -> Self {
        match outcome {
            Ok(_) => Self::Answered,
            // A `5xx` with `Retry-After` is the server asking to wait (as a server's own
            // circuit for one operation does): it is there.
            Err(Failure::Status {
                status,
                retry_after: None,
                ..
            }) if status.is_server_error() => Self::Failed,
            Err(Failure::Status { .. }) => Self::Answered,
            Err(Failure::Transport(_) | Failure::TimedOut) => Self::Failed,
            Err(Failure::NotSent(_) | Failure::Fatal(_)) => Self::Neither,
        }
    }
}

/// The key of a URL's host: its origin (`http://127.0.0.1:3000`), without user information.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

impl Breakers {
    pub(crate) fn new(settings: CircuitBreaker) -> Self {
        Self {
            settings,
            hosts: Mutex::new(HashMap::default()),
            tracked: AtomicUsize::new(0),
        }
    }

    /// Whether no host has failed (as far as a look without the lock tells).
    fn all_well(&self) -> bool {
        self.tracked.load(Ordering::Relaxed) == 0
    }

    fn hosts(&self) -> Hosts<'_> {
        Hosts {
            map: self.hosts.lock().unwrap_or_else(PoisonError::into_inner),
            tracked: &self.tracked,
        }
    }

    /// A pass for one call, which holds its trials and gives them back if it is dropped; one
    /// that counts nothing when the breaker is off.
    pub(crate) fn pass(&self) -> Pass<'_> {
        Pass {
            breakers: (self.settings.failures > 0).then_some(self),
            state: Mutex::new(PassState::default()),
        }
    }

    /// Whether a call may go to `url`'s host now; as the trial when its cool-down is over.
    fn admit(&self, pass: &Pass<'_>, url: &Url) -> Result<(), Error> {
        if self.all_well() {
            return Ok(());
        }
        let key = origin(url);
        let mut hosts = self.hosts();
        let Some(host) = hosts.map.get_mut(&key) else {
            return Ok(());
        };
        let retry_in = match host.state {
            State::Closed => return Ok(()),
            State::Open { until } => {
                let now = Instant::now();
                if until <= now {
                    host.state = State::Trial;
                    drop(hosts);
                    pass.lock().trials.push(key);
                    return Ok(());
                }
                until - now
            }
            State::Trial if pass.lock().trials.contains(&key) => return Ok(()),
            State::Trial => Duration::ZERO,
        };
        Err(Error::unavailable(Unavailable {
            origin: key,
            failures: host.failures,
            retry_in,
        }))
    }

    /// Notes a call's verdict on `url`'s host.
    fn record(&self, url: &Url, verdict: Verdict, trials: &mut Vec<String>) {
        if self.all_well() && verdict != Verdict::Failed {
            return;
        }
        let key = origin(url);
        let mut hosts = self.hosts();
        let hosts = &mut hosts.map;
        let held = trials
            .iter()
            .position(|k| *k == key)
            .map(|i| trials.swap_remove(i));
        match verdict {
            Verdict::Answered => {
                hosts.remove(&key);
            }
            Verdict::Failed => {
                let host = hosts.entry(key.clone()).or_insert(Host {
                    failures: 0,
                    state: State::Closed,
                });
                host.failures = host.failures.saturating_add(1);
                if held.is_some() || host.failures >= self.settings.failures {
                    host.state = State::Open {
                        until: Instant::now() + self.settings.cool_down,
                    };
                }
                if hosts.len() > MAX_HOSTS {
                    evict(hosts, &key);
                }
            }
            Verdict::Neither => {
                if let Some(key) = held {
                    release(hosts, &key);
                }
            }
        }
    }

    /// Gives back trials that did not end with a verdict: the next call may try.
    fn release(&self, trials: &[String]) {
        let mut hosts = self.hosts();
        for key in trials {
            release(&mut hosts.map, key);
        }
    }
}

/// A trial that ended without a verdict: the host's next call is a trial.
fn release(hosts: &mut HashMap<String, Host, foldhash::fast::RandomState>, key: &str) {
    if let Some(host) = hosts.get_mut(key)
        && host.state == State::Trial
    {
        host.state = State::Open {
            until: Instant::now(),
        };
    }
}

/// Keeps at most [`MAX_HOSTS`] hosts, `newest` among them: forgets those that are closed,
/// then the open one that would be tried soonest.
fn evict(hosts: &mut HashMap<String, Host, foldhash::fast::RandomState>, newest: &str) {
    hosts.retain(|key, host| host.state != State::Closed || key == newest);
    let now = Instant::now();
    while hosts.len() > MAX_HOSTS {
        let soonest = hosts
            .iter()
            .filter(|(key, _)| *key != newest)
            .min_by_key(|(_, host)| match host.state {
                State::Open { until } => until,
                State::Closed | State::Trial => now,
            })
            .map(|(key, _)| key.clone());
        match soonest {
            Some(key) => hosts.remove(&key),
            None => break,
        };
    }
}

/// One call's way through the breaker: each hop is admitted by its host's circuit, and
/// the call's verdict goes to the host of its last hop. Dropped before that, it gives back
/// the trials it holds, so a cancelled trial never leaves a host shut.
#[derive(Debug)]
pub(crate) struct Pass<'a> {
    /// `None`: every hop goes, nothing is counted (a stream's reconnections).
    breakers: Option<&'a Breakers>,
    state: Mutex<PassState>,
}

#[derive(Debug, Default)]
struct PassState {
    /// The hosts whose trial this call is.
    trials: Vec<String>,
    /// The last hop of the current attempt, when a redirect led away from the first.
    redirected: Option<Url>,
}

impl Pass<'_> {
    /// A pass that admits every hop and counts nothing.
    pub(crate) fn free() -> Self {
        Pass {
            breakers: None,
            state: Mutex::new(PassState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PassState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits one hop of an attempt: the first (`hop` 0, at the request's own URL) or one a
    /// redirect leads to.
    pub(crate) fn admit(&self, hop: usize, url: &Url) -> Result<(), Error> {
        let Some(breakers) = self.breakers else {
            return Ok(());
        };
        self.lock().redirected = (hop > 0).then(|| url.clone());
        breakers.admit(self, url)
    }

    /// Notes that `url`'s host answered with a redirect: it is there.
    pub(crate) fn answered(&self, url: &Url) {
        if let Some(breakers) = self.breakers {
            let mut trials = std::mem::take(&mut self.lock().trials);
            breakers.record(url, Verdict::Answered, &mut trials);
            self.lock().trials = trials;
        }
    }

    /// Ends the call: its verdict goes to the host of the last hop (`first` when there was
    /// no redirect), and the other trials it holds are given back.
    pub(crate) fn finish(self, first: &Url, verdict: Verdict) {
        let Some(breakers) = self.breakers else {
            return;
        };
        let mut state = std::mem::take(&mut *self.lock());
        let last = state.redirected.as_ref().unwrap_or(first);
        breakers.record(last, verdict, &mut state.trials);
        if !state.trials.is_empty() {
            breakers.release(&state.trials);
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let trials = std::mem::take(&mut self.lock().trials);
        if let Some(breakers) = self.breakers
            && !trials.is_empty()
        {
            breakers.release(&trials);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(port: u32) -> Url {
        Url::parse(&format!(
            "http://user:secret@10.0.{}.{}:8080/api?key=k",
            port / 250,
            port % 250
        ))
        .unwrap()
    }

    /// One call to `url`, ended with `verdict`; whether it was admitted.
    fn call(breakers: &Breakers, url: &Url, verdict: Verdict) -> Result<(), Error> {
        let pass = breakers.pass();
        pass.admit(0, url)?;
        pass.finish(url, verdict);
        Ok(())
    }

    #[test]
    fn the_record_of_hosts_is_bounded() {
        let breakers = Breakers::new(CircuitBreaker::new().failures(2));
        for port in 0..3 * MAX_HOSTS as u32 {
            call(&breakers, &url(port), Verdict::Failed).unwrap();
        }
        assert!(breakers.hosts().map.len() <= MAX_HOSTS);
        // Open hosts are kept before closed ones, and open ones are still bounded.
        for port in 0..3 * MAX_HOSTS as u32 {
            let _ = call(&breakers, &url(port), Verdict::Failed);
            let _ = call(&breakers, &url(port), Verdict::Failed);
        }
        let hosts = breakers.hosts();
        let hosts = &hosts.map;
        assert!(hosts.len() <= MAX_HOSTS);
        assert!(
            hosts
                .values()
                .filter(|host| host.state == State::Closed)
                .count()
                <= 1
        );
        // The newest failure is always kept.
        let last = origin(&url(3 * MAX_HOSTS as u32 - 1));
        assert!(matches!(hosts[&last].state, State::Open { .. }));
    }

    #[test]
    fn the_key_is_the_origin_without_credentials() {
        let breakers = Breakers::new(CircuitBreaker::new().failures(1));
        call(&breakers, &url(1), Verdict::Failed).unwrap();
        let error = call(&breakers, &url(1), Verdict::Answered).unwrap_err();
        assert!(error.is_unavailable());
        let message = error.to_string();
        assert!(message.contains("http://10.0.0.1:8080"), "{message}");
        assert!(
            !message.contains("secret") && !message.contains("key=k"),
            "{message}"
        );
        assert_eq!(
            breakers.hosts().map.keys().collect::<Vec<_>>(),
            ["http://10.0.0.1:8080"]
        );
    }

    #[test]
    fn one_trial_at_a_time_and_a_dropped_one_is_given_back() {
        let breakers = Breakers::new(CircuitBreaker::new().failures(1).cool_down(Duration::ZERO));
        call(&breakers, &url(1), Verdict::Failed).unwrap();
        let trial = breakers.pass();
        trial.admit(0, &url(1)).unwrap();
        // Its retries go through; another call does not.
        trial.admit(0, &url(1)).unwrap();
        let error = call(&breakers, &url(1), Verdict::Answered).unwrap_err();
        assert_eq!(error.retry_in(), Some(Duration::ZERO));
        assert!(
            error.to_string().contains("a trial call is under way"),
            "{error}"
        );
        drop(trial);
        // The next call is the trial; its success closes the circuit.
        call(&breakers, &url(1), Verdict::Answered).unwrap();
        assert!(breakers.hosts().map.is_empty());
        assert!(breakers.all_well());
    }

    #[test]
    fn off_never_opens() {
        let breakers = Breakers::new(CircuitBreaker::off());
        for _ in 0..10 {
            call(&breakers, &url(1), Verdict::Failed).unwrap();
        }
        assert!(breakers.hosts().map.is_empty());
        assert_eq!(
            format!("{:?}", CircuitBreaker::off()),
            "CircuitBreaker(off)"
        );
        assert_eq!(
            CircuitBreaker::new().failures(0),
            CircuitBreaker::new().failures(1)
        );
    }
}

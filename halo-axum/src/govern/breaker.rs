//! `resilience.circuit`: a tool whose calls keep failing is not run for a while (`503` with
//! `Retry-After`), then tried again one probe at a time.
//!
//! One breaker per tool, in this process's memory (instances do not share it). A small state
//! machine under a mutex rather than a crate: `failsafe`, the maintained one, lets every call
//! through while half-open and closes on the first success (HALO declares one probe at a time
//! and `successes` to close), reads its own clock (tests here pause tokio's), and has no
//! permit to release when a call is dropped. The lock is held for a few comparisons, never
//! across an `await`, and a closed circuit's calls that succeed never take it: two atomics
//! mirror what they need (measured, a governed GET in process with a circuit / without:
//! 1.010-1.015, about 35 ns; 1.015-1.023 with the lock taken twice on every call).
//!
//! - Closed: calls pass; a failure (a `5xx` answer, the layer's own `504` included, or the
//!   inner service's error) adds one to the failures in a row, a success resets them. At
//!   `failures` in a row it opens.
//! - Open: calls are refused until `cool_down` has passed since it opened.
//! - Half-open: one call at a time is let through as a probe, the others refused. `successes`
//!   successful probes in a row close it; a failed one opens it again.
//!
//! A call that is let through holds a [`Permit`] until its handler answers. A permit dropped
//! before (the client went away, a streamed call cancelled, a refusal after this step such as
//! an idempotent replay) counts as neither a success nor a failure: the handler said nothing
//! about its health. A dropped probe frees the half-open slot for the next call. Each change of
//! state starts a new generation: answers of calls let through in an earlier one are ignored,
//! so a slow call admitted while closed cannot close or reopen a circuit that moved on.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::Response;
use halo_protocol::Circuit;
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};
use tokio::time::Instant;

use super::Governance;
use super::rate::seconds_up;
use crate::audit::Outcome;
use crate::problem;
use crate::step::{Step, Stop};

/// The circuit breaker of one tool.
#[derive(Debug)]
pub(crate) struct Breaker {
    circuit: Circuit,
    state: Mutex<State>,
    /// The generation while the circuit is closed, [`NOT_CLOSED`] otherwise (written under
    /// the lock): calls of a closed circuit are let through without it.
    closed: AtomicU64,
    /// The failures in a row while closed (written under the lock): a success when there are
    /// none changes nothing, and is settled without it.
    failures: AtomicU32,
}

/// [`Breaker::closed`] while the circuit is open or half-open.
const NOT_CLOSED: u64 = u64::MAX;

#[derive(Debug)]
struct State {
    phase: Phase,
    /// Changes with every change of phase.
    generation: u64,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool, successes: u32 },
}

/// What a call that was let through said of the tool's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Success,
    Failure,
    /// Dropped before an answer, or refused after the breaker.
    Neither,
}

/// Why a call was refused: when to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Until the circuit is half-open (zero while a probe is running).
    pub(crate) retry_after: Duration,
}

impl Breaker {
    pub(crate) fn new(circuit: Circuit) -> Self {
        Self {
            circuit,
            state: Mutex::new(State {
                phase: Phase::Closed { failures: 0 },
                generation: 0,
            }),
            closed: AtomicU64::new(0),
            failures: AtomicU32::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The lock is never held across code that panics; a poisoned state is still sound.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets one call through (the permit to hold until it answers), or refuses it.
    pub(crate) fn enter(self: &Arc<Self>) -> Result<Permit, Refused> {
        let closed = self.closed.load(Ordering::Acquire);
        if closed != NOT_CLOSED {
            return Ok(self.permit(closed));
        }
        let mut state = self.state();
        match state.phase {
            Phase::Closed { .. } => {}
            Phase::Open { until } => {
                let now = Instant::now();
                if now < until {
                    return Err(Refused {
                        retry_after: until - now,
                    });
                }
                state.phase = Phase::HalfOpen {
                    probing: true,
                    successes: 0,
                };
                state.generation += 1;
            }
            Phase::HalfOpen {
                probing: true,
                successes: _,
            } => {
                return Err(Refused {
                    retry_after: Duration::ZERO,
                });
            }
            Phase::HalfOpen {
                ref mut probing, ..
            } => *probing = true,
        }
        Ok(self.permit(state.generation))
    }

    fn permit(self: &Arc<Self>, generation: u64) -> Permit {
        Permit {
            breaker: Arc::clone(self),
            generation,
            verdict: Verdict::Neither,
        }
    }

    /// What a call let through in `generation` said.
    fn settle(&self, generation: u64, verdict: Verdict) {
        if verdict != Verdict::Failure
            && self.failures.load(Ordering::Relaxed) == 0
            && self.closed.load(Ordering::Acquire) == generation
        {
            // Closed with no failures: nothing to reset.
            return;
        }
        let mut state = self.state();
        if state.generation != generation {
            return;
        }
        let (to_open, to_close) = (
            self.circuit.failures().get(),
            self.circuit.successes().get(),
        );
        let next = match (state.phase, verdict) {
            // No permit is ever of an open generation.
            (Phase::Closed { failures: 0 }, Verdict::Success)
            | (Phase::Closed { .. }, Verdict::Neither)
            | (Phase::Open { .. }, _) => return,
            (Phase::Closed { .. }, Verdict::Success) => Phase::Closed { failures: 0 },
            (Phase::Closed { failures }, Verdict::Failure) if failures + 1 < to_open => {
                Phase::Closed {
                    failures: failures + 1,
                }
            }
            (Phase::HalfOpen { successes, .. }, Verdict::Neither) => Phase::HalfOpen {
                probing: false,
                successes,
            },
            (Phase::HalfOpen { successes, .. }, Verdict::Success) if successes + 1 < to_close => {
                Phase::HalfOpen {
                    probing: false,
                    successes: successes + 1,
                }
            }
            (Phase::HalfOpen { .. }, Verdict::Success) => {
                state.generation += 1;
                Phase::Closed { failures: 0 }
            }
            (Phase::Closed { .. } | Phase::HalfOpen { .. }, Verdict::Failure) => {
                state.generation += 1;
                let now = Instant::now();
                // A cool-down past what the clock can count is as good as a century.
                let century = Duration::from_secs(100 * 365 * 24 * 3600);
                let until =
                    (now.checked_add(self.circuit.cool_down())).unwrap_or_else(|| now + century);
                Phase::Open { until }
            }
        };
        state.phase = next;
        let (closed, failures) = match next {
            Phase::Closed { failures } => (state.generation, failures),
            Phase::Open { .. } | Phase::HalfOpen { .. } => (NOT_CLOSED, 0),
        };
        self.failures.store(failures, Ordering::Relaxed);
        self.closed.store(closed, Ordering::Release);
    }
}

/// A call the breaker let through: settled when its answer is [`record`](Self::record)ed,
/// or, dropped without one, as neither a success nor a failure.
#[derive(Debug)]
pub(crate) struct Permit {
    breaker: Arc<Breaker>,
    generation: u64,
    verdict: Verdict,
}

impl Permit {
    /// The handler's answer: a failure when it is a `5xx` (the layer's `504` included) or an
    /// error of the inner service, a success otherwise.
    pub(crate) fn record<E>(mut self, answer: &Result<Response, E>) {
        self.verdict = match answer {
            Ok(response) if !response.status().is_server_error() => Verdict::Success,
            _ => Verdict::Failure,
        };
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.breaker.settle(self.generation, self.verdict);
    }
}

impl Governance {
    /// The circuit step: the permit a call of the tool at `tool` holds until it answers (none
    /// when the tool declares no circuit), or `503` with `Retry-After` while its circuit is
    /// open or its one probe is running.
    pub(crate) fn enter(&self, tool: usize) -> Step<Option<Permit>> {
        let Some(breaker) = &self.rules(tool).breaker else {
            return Ok(None);
        };
        match breaker.enter() {
            Ok(permit) => Ok(Some(permit)),
            Err(refused) => Err(circuit_open(&breaker.circuit, refused)),
        }
    }
}

/// `503` for a call refused by an open circuit, with `Retry-After` in whole seconds (at
/// least 1).
#[cold]
fn circuit_open(circuit: &Circuit, refused: Refused) -> Stop {
    let seconds = seconds_up(refused.retry_after).max(1);
    let detail = if refused.retry_after.is_zero() {
        format!(
            "this operation's circuit is half-open and its probe call is running; try again in {seconds} s"
        )
    } else {
        format!(
            "this operation failed {} times in a row and its circuit is open; try again in {seconds} s",
            circuit.failures()
        )
    };
    let mut response = problem::response(StatusCode::SERVICE_UNAVAILABLE, detail);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    Stop::new(Outcome::CircuitOpen, response)
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn breaker(failures: u32, successes: u32) -> Arc<Breaker> {
        let count = |n| NonZeroU32::new(n).unwrap();
        let circuit =
            Circuit::new(count(failures), Duration::from_secs(10), count(successes)).unwrap();
        Arc::new(Breaker::new(circuit))
    }

    fn answer(status: u16) -> Result<Response, ()> {
        let mut response = Response::default();
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
        Ok(response)
    }

    fn call(breaker: &Arc<Breaker>, status: u16) -> Result<(), Refused> {
        breaker.enter()?.record(&answer(status));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_failures_in_a_row_then_probes_one_at_a_time() {
        let breaker = breaker(3, 2);
        // A success in between resets the count; 4xx are successes for the breaker.
        for status in [500, 500, 200, 404, 502, 503] {
            call(&breaker, status).unwrap();
        }
        call(&breaker, 504).unwrap();
        let refused = call(&breaker, 200).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Half-open: one probe; a second call is refused while it runs.
        let probe = breaker.enter().unwrap();
        assert_eq!(call(&breaker, 200).unwrap_err().retry_after, Duration::ZERO);
        // A dropped probe frees the slot without counting.
        drop(probe);
        call(&breaker, 200).unwrap();
        call(&breaker, 200).unwrap();
        // Closed again: failures count from zero.
        call(&breaker, 500).unwrap();
        call(&breaker, 500).unwrap();
        call(&breaker, 500).unwrap();
        assert!(call(&breaker, 200).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_opens_it_again_and_stale_answers_are_ignored() {
        let breaker = breaker(1, 1);
        let slow = breaker.enter().unwrap();
        call(&breaker, 500).unwrap();
        // The slow call of the closed generation answers once the circuit is open: ignored.
        slow.record(&answer(200));
        assert!(call(&breaker, 200).is_err());
        tokio::time::advance(Duration::from_secs(10)).await;
        call(&breaker, 500).unwrap();
        let refused = call(&breaker, 200).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(10)).await;
        call(&breaker, 200).unwrap();
        call(&breaker, 200).unwrap();
        let error: Result<Response, ()> = Err(());
        breaker.enter().unwrap().record(&error);
        assert!(call(&breaker, 200).is_err(), "an inner error is a failure");
    }
}

//! `resilience.circuit`: a tool whose calls keep failing is not run for a while (`503` with
//! `Retry-After`), then tried again one probe at a time.
//!
//! One breaker per tool, in this process's memory, or mirroring a state shared by every
//! instance through a [`CircuitStore`] (Redis: `redis::breaker`). A small state machine under
//! a mutex rather than a crate: `failsafe`, the maintained one, lets every call through while
//! half-open and closes on the first success (HALO declares one probe at a time and
//! `successes` to close), reads its own clock (tests here pause tokio's), and has no permit to
//! release when a call is dropped. The lock is held for a few comparisons, never across an
//! `await`, and a closed circuit's calls that succeed never take it: two atomics mirror what
//! they need (measured, a governed GET in process with a circuit / without: 1.010-1.015,
//! about 35 ns; 1.015-1.023 with the lock taken twice on every call).
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
//!
//! **Shared** (a store given): the shared state decides every change, and the local state
//! mirrors it ([`Source::Shared`] names the shared generation the local one mirrors). The
//! closed fast path is the same: no exchange with the store. What goes to the store:
//!
//! - a call that finds the mirror not closed and not cooling down (half-open, its cool-down
//!   over, or not read yet) asks it to be let through (the store moves an open circuit whose
//!   cool-down is over to half-open, and leases its one probe slot);
//! - answers that can change the state (a failure, a success or a dropped probe once a failure
//!   is known, any answer while half-open) are queued as a [`Batch`] and sent by one task per
//!   breaker at a time; answers that come while it runs join the next batch, so a tool sends
//!   at most one report at a time however many calls fail;
//! - every answer of the store carries its state, which the mirror takes (as does the store's
//!   periodic refresh).
//!
//! When the store cannot be reached the breaker goes on from the state it mirrored, as in
//! memory ([`Source::Local`]), the answers of the failed report replayed on it, until the store
//! answers again: its state then replaces the local one. What touches the store is in
//! [`shared`]; this file is the state machine and its fast path.

pub mod metrics;
mod shared;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use halo_protocol::Circuit;
use tokio::time::Instant;

pub use self::metrics::CircuitState;
pub use self::shared::CircuitStore;
#[cfg(feature = "redis")]
pub(crate) use self::shared::SharedAnswer;
pub(crate) use self::shared::{Batch, View};

/// The circuit breaker of one tool.
#[derive(Debug)]
pub struct Breaker {
    circuit: Circuit,
    /// The tool's manifest name: the metrics' label.
    name: Arc<str>,
    /// Whether changes of state go to the metrics.
    metered: bool,
    /// Where the state is shared, when it is.
    sharing: Option<Sharing>,
    state: Mutex<State>,
    /// The generation while the circuit is closed, [`NOT_CLOSED`] otherwise (written under
    /// the lock): calls of a closed circuit are let through without it.
    closed: AtomicU64,
    /// The failures in a row while closed (written under the lock): a success when there are
    /// none changes nothing, and is settled without it.
    failures: AtomicU32,
}

/// The store a breaker's state is shared through, and what it tells the store.
#[derive(Debug)]
struct Sharing {
    store: Arc<dyn CircuitStore>,
    /// Where the store keeps the tool's circuit ([`CircuitStore::key`]).
    key: String,
    /// How long a probe may hold the shared half-open slot.
    lease: Duration,
}

/// [`Breaker::closed`] while the circuit is open or half-open.
const NOT_CLOSED: u64 = u64::MAX;
/// The generation of a permit whose answer counts for nothing (the state moved on while the
/// store was asked).
const STALE: u64 = u64::MAX - 1;

#[derive(Debug)]
struct State {
    phase: Phase,
    /// Changes with every change of phase.
    generation: u64,
    source: Source,
    /// Answers not sent to the store yet.
    pending: Option<Batch>,
    /// A task is sending them.
    reporting: bool,
}

/// What decides the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
enum Source {
    /// This breaker: no store, or the store cannot be reached.
    Local,
    /// A store not heard from yet: every call asks it.
    Unknown,
    /// The store's state of that generation, mirrored.
    Shared(u64),
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool, successes: u32 },
}

impl Phase {
    fn state(self) -> CircuitState {
        match self {
            Self::Closed { .. } => CircuitState::Closed,
            Self::Open { .. } => CircuitState::Open,
            Self::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    /// The phase `view` describes, read at `now`.
    fn of(view: &View, now: Instant) -> Self {
        match view.state {
            CircuitState::Closed => Self::Closed {
                failures: view.failures,
            },
            CircuitState::Open => Self::Open {
                until: later(now, view.wait),
            },
            CircuitState::HalfOpen => Self::HalfOpen {
                probing: view.probing,
                successes: view.successes,
            },
        }
    }
}

/// `now + wait`; a wait past what the clock can count is as good as a century.
fn later(now: Instant, wait: Duration) -> Instant {
    let century = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(wait).unwrap_or_else(|| now + century)
}

/// What a call that was let through said of the tool's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Success,
    Failure,
    /// Dropped before an answer, or refused after the breaker.
    Neither,
}

/// Why a call was refused: when to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Until the circuit is half-open (zero while a probe is running).
    pub retry_after: Duration,
}

/// What the breaker's own state says of a call.
enum Entry {
    Pass(Permit),
    Refused(Refused),
    /// The store decides.
    Ask,
}

impl Breaker {
    /// The circuit it enforces.
    #[inline]
    #[must_use]
    pub fn circuit(&self) -> &Circuit {
        &self.circuit
    }
}

impl Breaker {
    /// The breaker of the tool named `name`: in this process's memory, or mirroring the
    /// state `store` shares when there is one; its changes of state in the metrics when
    /// `metered`. A probe holds the shared half-open slot for the tool's deadline (`timeout`)
    /// and a second more (its answer is in by then), or for the cool-down when the tool has
    /// no deadline.
    #[must_use]
    pub fn build(
        circuit: Circuit,
        name: &str,
        timeout: Option<Duration>,
        metered: bool,
        store: &Option<Arc<dyn CircuitStore>>,
    ) -> Arc<Self> {
        let name: Arc<str> = Arc::from(name);
        if metered {
            metrics::circuit(&name, CircuitState::Closed, false);
        }
        let sharing = store.as_ref().map(|store| Sharing {
            store: Arc::clone(store),
            key: store.key(&name),
            lease: timeout
                .map_or(circuit.cool_down(), |deadline| {
                    deadline.saturating_add(Duration::from_secs(1))
                })
                .max(Duration::from_millis(1)),
        });
        // A shared state not read yet: every call asks the store until it answers.
        let (source, closed) = match sharing {
            Some(_) => (Source::Unknown, NOT_CLOSED),
            None => (Source::Local, 0),
        };
        let breaker = Arc::new(Self {
            circuit,
            name,
            metered,
            sharing,
            state: Mutex::new(State {
                phase: Phase::Closed { failures: 0 },
                generation: 0,
                source,
                pending: None,
                reporting: false,
            }),
            closed: AtomicU64::new(closed),
            failures: AtomicU32::new(0),
        });
        if let Some(sharing) = &breaker.sharing {
            sharing.store.watch(&breaker, &sharing.key);
        }
        breaker
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The lock is never held across code that panics; a poisoned state is still sound.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets one call through (the permit to hold until it answers), or refuses it.
    pub async fn enter(self: &Arc<Self>) -> Result<Permit, Refused> {
        match self.try_enter() {
            Entry::Pass(permit) => Ok(permit),
            Entry::Refused(refused) => Err(refused),
            Entry::Ask => self.ask().await,
        }
    }

    fn try_enter(self: &Arc<Self>) -> Entry {
        let closed = self.closed.load(Ordering::Acquire);
        if closed != NOT_CLOSED {
            return Entry::Pass(self.permit(closed));
        }
        let mut state = self.state();
        if state.source != Source::Local {
            return match state.phase {
                Phase::Closed { .. } if state.source != Source::Unknown => {
                    Entry::Pass(self.permit(state.generation))
                }
                Phase::Open { until } if Instant::now() < until => Entry::Refused(Refused {
                    retry_after: until - Instant::now(),
                }),
                _ => Entry::Ask,
            };
        }
        match self.enter_local(&mut state) {
            Ok(generation) => Entry::Pass(self.permit(generation)),
            Err(refused) => Entry::Refused(refused),
        }
    }

    /// The local state machine's decision: the generation of the permit, or a refusal.
    fn enter_local(&self, state: &mut State) -> Result<u64, Refused> {
        match state.phase {
            Phase::Closed { .. } => {}
            Phase::Open { until } => {
                let now = Instant::now();
                if now < until {
                    return Err(Refused {
                        retry_after: until - now,
                    });
                }
                self.change(
                    state,
                    Phase::HalfOpen {
                        probing: true,
                        successes: 0,
                    },
                );
            }
            Phase::HalfOpen { probing: true, .. } => {
                return Err(Refused {
                    retry_after: Duration::ZERO,
                });
            }
            Phase::HalfOpen {
                ref mut probing, ..
            } => *probing = true,
        }
        Ok(state.generation)
    }

    /// Asks the store; when it cannot be reached, goes on locally.
    async fn ask(self: &Arc<Self>) -> Result<Permit, Refused> {
        let answer = match &self.sharing {
            Some(sharing) => sharing.store.enter(&sharing.key, sharing.lease).await,
            None => None,
        };
        let Some(answer) = answer else {
            let mut state = self.state();
            self.go_local(&mut state);
            return self
                .enter_local(&mut state)
                .map(|generation| self.permit(generation));
        };
        let generation = self.adopt(&answer);
        if answer.granted {
            Ok(self.permit(generation.unwrap_or(STALE)))
        } else {
            Err(Refused {
                retry_after: match answer.view.state {
                    CircuitState::Open => answer.view.wait,
                    _ => Duration::ZERO,
                },
            })
        }
    }

    fn permit(self: &Arc<Self>, generation: u64) -> Permit {
        Permit {
            breaker: Arc::clone(self),
            generation,
            verdict: Verdict::Neither,
        }
    }

    /// Moves to `next`, a new generation; to the metrics when the state changes.
    fn change(&self, state: &mut State, next: Phase) {
        let before = state.phase.state();
        state.generation += 1;
        state.phase = next;
        self.publish(state);
        if self.metered && before != next.state() {
            metrics::circuit(&self.name, next.state(), true);
        }
    }

    /// Mirrors the phase in the atomics.
    fn publish(&self, state: &State) {
        let (closed, failures) = match state.phase {
            Phase::Closed { failures } if state.source != Source::Unknown => {
                (state.generation, failures)
            }
            _ => (NOT_CLOSED, 0),
        };
        self.failures.store(failures, Ordering::Relaxed);
        self.closed.store(closed, Ordering::Release);
    }

    /// What a call let through in `generation` said.
    fn settle(self: &Arc<Self>, generation: u64, verdict: Verdict) {
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
        match state.source {
            Source::Local => self.step(&mut state, verdict),
            Source::Unknown => {}
            Source::Shared(shared) => self.queue(state, shared, verdict),
        }
    }

    /// The local state machine: what `verdict` does to the phase.
    fn step(&self, state: &mut State, verdict: Verdict) {
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
                return self.change(state, Phase::Closed { failures: 0 });
            }
            (Phase::Closed { .. } | Phase::HalfOpen { .. }, Verdict::Failure) => {
                let until = later(Instant::now(), self.circuit.cool_down());
                return self.change(state, Phase::Open { until });
            }
        };
        state.phase = next;
        self.publish(state);
    }
}

/// A call the breaker let through: settled when its answer is [`record`](Self::record)ed,
/// or, dropped without one, as neither a success nor a failure.
#[derive(Debug)]
pub struct Permit {
    breaker: Arc<Breaker>,
    generation: u64,
    verdict: Verdict,
}

impl Permit {
    /// The call's answer: its status, `None` when the service failed without one. A `5xx`
    /// (a deadline's `504` included) or no answer is a failure, anything else a success.
    #[inline]
    pub fn record(mut self, status: Option<http::StatusCode>) {
        self.verdict = match status {
            Some(status) if !status.is_server_error() => Verdict::Success,
            _ => Verdict::Failure,
        };
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.breaker.settle(self.generation, self.verdict);
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn breaker(failures: u32, successes: u32) -> Arc<Breaker> {
        let count = |n| NonZeroU32::new(n).unwrap();
        let circuit =
            Circuit::new(count(failures), Duration::from_secs(10), count(successes)).unwrap();
        Breaker::build(circuit, "tool", None, false, &None)
    }

    fn answer(status: u16) -> Option<http::StatusCode> {
        Some(http::StatusCode::from_u16(status).unwrap())
    }

    async fn call(breaker: &Arc<Breaker>, status: u16) -> Result<(), Refused> {
        breaker.enter().await?.record(answer(status));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_failures_in_a_row_then_probes_one_at_a_time() {
        let breaker = breaker(3, 2);
        // A success in between resets the count; 4xx are successes for the breaker.
        for status in [500, 500, 200, 404, 502, 503] {
            call(&breaker, status).await.unwrap();
        }
        call(&breaker, 504).await.unwrap();
        let refused = call(&breaker, 200).await.unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Half-open: one probe; a second call is refused while it runs.
        let probe = breaker.enter().await.unwrap();
        let busy = call(&breaker, 200).await.unwrap_err();
        assert_eq!(busy.retry_after, Duration::ZERO);
        // A dropped probe frees the slot without counting.
        drop(probe);
        call(&breaker, 200).await.unwrap();
        call(&breaker, 200).await.unwrap();
        // Closed again: failures count from zero.
        call(&breaker, 500).await.unwrap();
        call(&breaker, 500).await.unwrap();
        call(&breaker, 500).await.unwrap();
        assert!(call(&breaker, 200).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_opens_it_again_and_stale_answers_are_ignored() {
        let breaker = breaker(1, 1);
        let slow = breaker.enter().await.unwrap();
        call(&breaker, 500).await.unwrap();
        // The slow call of the closed generation answers once the circuit is open: ignored.
        slow.record(answer(200));
        assert!(call(&breaker, 200).await.is_err());
        tokio::time::advance(Duration::from_secs(10)).await;
        call(&breaker, 500).await.unwrap();
        let refused = call(&breaker, 200).await.unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(10)).await;
        call(&breaker, 200).await.unwrap();
        call(&breaker, 200).await.unwrap();
        breaker.enter().await.unwrap().record(None);
        assert!(
            call(&breaker, 200).await.is_err(),
            "an inner error is a failure"
        );
    }
}

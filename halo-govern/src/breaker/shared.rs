//! The shared half of a breaker: what a [`CircuitStore`] is asked and answers, the answers
//! queued for it as a [`Batch`], and how the breaker takes the store's state or, when the store
//! cannot be reached, goes on alone.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use halo_protocol::Circuit;
use tokio::time::Instant;

use super::metrics::{self, CircuitState};
use super::{Breaker, Phase, Source, State, Verdict};
use crate::store::StoreFuture;

/// Where the state of circuits is shared by every instance (Redis).
pub trait CircuitStore: Send + Sync + fmt::Debug {
    /// Where the circuit of the tool named `tool` is kept (asked once per tool).
    fn key(&self, tool: &str) -> String;

    /// Keeps `breaker` (its circuit at `key`) up to date with the shared state (called when
    /// the layer is built).
    fn watch(&self, breaker: &Arc<Breaker>, key: &str);

    /// Asks to let a call of the circuit at `key` through, a probe leasing the half-open
    /// slot for `lease`: the shared state, and whether the call may run. `None`: the store
    /// cannot be reached.
    fn enter<'a>(&'a self, key: &'a str, lease: Duration) -> StoreFuture<'a, Option<SharedAnswer>>;

    /// Tells the answers of `batch` to the circuit at `key`, declared as `circuit`: the shared
    /// state after them. `None`: the store cannot be reached.
    fn report<'a>(
        &'a self,
        key: &'a str,
        circuit: &'a Circuit,
        batch: Batch,
    ) -> StoreFuture<'a, Option<SharedAnswer>>;
}

/// What a [`CircuitStore`] answers.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub struct SharedAnswer {
    pub(crate) view: View,
    /// The call that asked may run.
    pub(crate) granted: bool,
    /// This exchange changed the shared state (this instance counts the change).
    pub(crate) moved: bool,
}

/// A shared circuit's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct View {
    pub(crate) state: CircuitState,
    /// Changes with every change of state.
    pub(crate) generation: u64,
    /// Failures in a row (closed).
    pub(crate) failures: u32,
    /// Successful probes in a row (half-open).
    pub(crate) successes: u32,
    /// Until the cool-down ends (open).
    pub(crate) wait: Duration,
    /// A probe holds the half-open slot.
    pub(crate) probing: bool,
}

/// Answers of calls of one shared generation, in order, as a shared count needs them: the
/// failures before the first success, whether there was one, and the failures after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    pub(crate) generation: u64,
    pub(crate) lead: u32,
    pub(crate) successes: u32,
    pub(crate) tail: u32,
    /// Calls dropped without an answer (a dropped probe frees the half-open slot).
    pub(crate) released: u32,
}

impl Batch {
    fn new(generation: u64) -> Self {
        Self {
            generation,
            lead: 0,
            successes: 0,
            tail: 0,
            released: 0,
        }
    }

    /// Adds one answer. Past `to_open` failures in a row after a success the batch opens the
    /// circuit whatever follows, so what follows is not kept.
    fn add(&mut self, verdict: Verdict, to_open: u32) {
        if self.tail >= to_open {
            return;
        }
        match verdict {
            Verdict::Failure if self.successes == 0 => self.lead = self.lead.saturating_add(1),
            Verdict::Failure => self.tail += 1,
            Verdict::Success => {
                self.successes = self.successes.saturating_add(1);
                self.tail = 0;
            }
            Verdict::Neither => self.released = self.released.saturating_add(1),
        }
    }

    /// The failures after the last success.
    fn trailing_failures(self) -> u32 {
        if self.successes == 0 {
            self.lead
        } else {
            self.tail
        }
    }

    /// The answers again, one by one, in an order with the same effect.
    fn verdicts(self) -> impl Iterator<Item = Verdict> {
        let repeat = |verdict, times: u32| std::iter::repeat_n(verdict, times as usize);
        repeat(Verdict::Failure, self.lead)
            .chain(repeat(Verdict::Success, self.successes))
            .chain(repeat(Verdict::Failure, self.tail))
            .chain(repeat(Verdict::Neither, self.released))
    }
}

impl Breaker {
    /// Takes the store's state in `answer`: the local generation that mirrors it, or `None`
    /// when the breaker mirrors a newer one already.
    pub fn adopt(&self, answer: &SharedAnswer) -> Option<u64> {
        let view = &answer.view;
        let mut state = self.state();
        let mirrored = match state.source {
            Source::Shared(known) if view.generation < known => return None,
            Source::Shared(known) => view.generation == known,
            Source::Local | Source::Unknown => false,
        };
        let before = state.phase.state();
        if !mirrored {
            // A new shared generation: a new local one, whose answers start afresh.
            state.generation += 1;
            state.source = Source::Shared(view.generation);
            state.pending = None;
        }
        state.phase = Phase::of(view, Instant::now());
        self.publish(&state);
        // Failures queued here and not counted there yet: a success is sent too.
        if state
            .pending
            .is_some_and(|batch| batch.trailing_failures() > 0)
        {
            self.failures.fetch_max(1, Ordering::Relaxed);
        }
        let changed = answer.moved || (!mirrored && before != view.state);
        if self.metered && changed {
            metrics::circuit(&self.name, view.state, answer.moved);
        }
        Some(state.generation)
    }

    /// The store cannot be reached: the local state machine takes over from the phase
    /// mirrored.
    pub(super) fn go_local(&self, state: &mut State) {
        if state.source == Source::Local {
            return;
        }
        tracing::warn!(
            target: "halo_axum::circuit",
            tool = %self.name,
            "the shared circuit state cannot be reached; this instance's breaker goes on alone"
        );
        state.source = Source::Local;
        state.pending = None;
        if let Phase::HalfOpen { probing, .. } = &mut state.phase {
            // The probe running elsewhere never answers here.
            *probing = false;
        }
        self.publish(state);
    }

    /// Queues `verdict` for the store (the shared generation `shared`), and starts the task
    /// that sends it unless one runs.
    pub(super) fn queue(
        self: &Arc<Self>,
        mut state: MutexGuard<'_, State>,
        shared: u64,
        verdict: Verdict,
    ) {
        match (state.phase, verdict) {
            (Phase::Closed { .. }, Verdict::Neither) | (Phase::Open { .. }, _) => return,
            // Until the store answers, successes after a failure are sent too; after a
            // success, others change nothing (the phase stays the store's).
            (Phase::Closed { .. }, Verdict::Failure) => self.failures.store(1, Ordering::Relaxed),
            (Phase::Closed { .. }, Verdict::Success) => self.failures.store(0, Ordering::Relaxed),
            (Phase::HalfOpen { .. }, _) => {}
        }
        let to_open = self.circuit.failures().get();
        state
            .pending
            .get_or_insert_with(|| Batch::new(shared))
            .add(verdict, to_open);
        if state.reporting {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                state.reporting = true;
                drop(state);
                runtime.spawn(Arc::clone(self).report());
            }
            Err(_) => {
                // No runtime to talk to the store from: as if it could not be reached.
                if let Some(batch) = state.pending.take() {
                    self.replay(&mut state, batch);
                }
            }
        }
    }

    /// Sends the queued answers, one batch at a time, until none are left.
    async fn report(self: Arc<Self>) {
        let Some(sharing) = &self.sharing else {
            return;
        };
        loop {
            let batch = {
                let mut state = self.state();
                let Some(batch) = state.pending.take() else {
                    state.reporting = false;
                    return;
                };
                batch
            };
            let reported = sharing.store.report(&sharing.key, &self.circuit, batch);
            match reported.await {
                Some(answer) => {
                    self.adopt(&answer);
                }
                None => {
                    let mut state = self.state();
                    self.replay(&mut state, batch);
                }
            }
        }
    }

    /// The store could not take `batch`: the breaker goes on locally, with its answers and
    /// those queued since.
    fn replay(&self, state: &mut State, batch: Batch) {
        if state.source != Source::Shared(batch.generation) {
            return;
        }
        let since = state
            .pending
            .take()
            .filter(|b| b.generation == batch.generation);
        self.go_local(state);
        let generation = state.generation;
        let verdicts = batch
            .verdicts()
            .chain(since.into_iter().flat_map(Batch::verdicts));
        for verdict in verdicts {
            if state.generation != generation {
                break;
            }
            self.step(state, verdict);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_keeps_what_a_shared_count_needs() {
        use Verdict::{Failure, Neither, Success};
        let mut batch = Batch::new(7);
        for verdict in [
            Failure, Failure, Success, Failure, Success, Failure, Neither,
        ] {
            batch.add(verdict, 3);
        }
        assert_eq!(
            (batch.lead, batch.successes, batch.tail, batch.released),
            (2, 2, 1, 1)
        );
        // Three failures in a row after a success open the circuit: what follows is moot.
        let mut decisive = Batch::new(7);
        for verdict in [Success, Failure, Failure, Failure, Success, Failure] {
            decisive.add(verdict, 3);
        }
        assert_eq!((decisive.successes, decisive.tail), (1, 3));
        let replayed: Vec<Verdict> = batch.verdicts().collect();
        assert_eq!(
            replayed,
            [Failure, Failure, Success, Success, Failure, Neither]
        );
    }
}

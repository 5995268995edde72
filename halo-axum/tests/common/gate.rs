//! Handlers the test holds or watches, instead of handlers that sleep: a [`Gate`] holds them
//! until the test lets them through (and tells the test they are waiting there); [`Drops`]
//! tells the test that a handler was dropped before it finished; [`Runs`] counts how many
//! times handlers ran; [`Answering`] is the query of a handler that answers with the status
//! the test asks for, held at the gate first when asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{Semaphore, watch};
use utoipa::IntoParams;

/// How long a test waits for what a gate or a drop guard tells, on Tokio's clock.
const PATIENCE: Duration = Duration::from_secs(10);

/// Where handlers wait until the test lets them through.
#[derive(Clone, Debug)]
pub struct Gate {
    /// How many handlers have arrived so far.
    arrived: Arc<watch::Sender<usize>>,
    passes: Arc<Semaphore>,
}

impl Default for Gate {
    /// A closed gate.
    fn default() -> Self {
        Self {
            arrived: Arc::new(watch::channel(0).0),
            passes: Arc::new(Semaphore::new(0)),
        }
    }
}

impl Gate {
    /// A gate every handler passes at once.
    pub fn open() -> Self {
        let gate = Self::default();
        gate.let_through(Semaphore::MAX_PERMITS);
        gate
    }

    /// For the handler: arrives, then waits until the test lets it through.
    pub async fn pass(&self) {
        self.arrived.send_modify(|arrived| *arrived += 1);
        self.passes.acquire().await.expect("an open gate").forget();
    }

    /// For the test: waits until `count` handlers in all have arrived.
    pub async fn arrivals(&self, count: usize) {
        let mut arrived = self.arrived.subscribe();
        tokio::time::timeout(PATIENCE, arrived.wait_for(|arrived| *arrived >= count))
            .await
            .unwrap_or_else(|_| panic!("{count} handlers did not reach the gate"))
            .expect("the gate is there");
    }

    /// For the test: lets `count` more handlers through.
    pub fn let_through(&self, count: usize) {
        self.passes.add_permits(count);
    }
}

/// Counts the handlers dropped before they finished.
#[derive(Clone, Debug)]
pub struct Drops(Arc<watch::Sender<usize>>);

impl Default for Drops {
    fn default() -> Self {
        Self(Arc::new(watch::channel(0).0))
    }
}

impl Drops {
    /// For the handler: held while it runs; counted when dropped before
    /// [`Running::finished`].
    pub fn running(&self) -> Running {
        Running {
            drops: self.clone(),
            finished: false,
        }
    }

    /// For the test: waits until `count` handlers in all were dropped unfinished.
    pub async fn wait(&self, count: usize) {
        let mut dropped = self.0.subscribe();
        tokio::time::timeout(PATIENCE, dropped.wait_for(|dropped| *dropped >= count))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{count} handlers were not dropped (only {})",
                    *self.0.borrow()
                )
            })
            .expect("the count is there");
    }

    /// How many handlers were dropped unfinished so far.
    pub fn count(&self) -> usize {
        *self.0.borrow()
    }
}

/// A handler running; see [`Drops::running`].
#[derive(Debug)]
#[must_use = "a handler holds it while it runs"]
pub struct Running {
    drops: Drops,
    finished: bool,
}

impl Running {
    /// The handler got to its end.
    pub fn finished(mut self) {
        self.finished = true;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.finished {
            self.drops.0.send_modify(|dropped| *dropped += 1);
        }
    }
}

/// How many times handlers ran: kept in the handlers' state, read by the test.
#[derive(Clone, Debug, Default)]
pub struct Runs(Arc<AtomicUsize>);

impl Runs {
    /// Counts one more run: how many there were with it.
    pub fn add(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// How many runs there were.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// The query of a handler that answers with the status asked for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Answering {
    /// The status to answer with.
    pub status: u16,
    /// Wait at the test's gate first.
    #[serde(default)]
    pub hold: bool,
}

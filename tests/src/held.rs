//! Handlers that only a cancel ends, and what they tell a test: that one arrived, that one was
//! dropped unfinished.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// What handlers that only a cancel ends tell a test. Its clones share what they tell: the
/// handler holds one (as its state), the test another.
#[derive(Clone, Debug, Default)]
pub struct Held {
    arrived: Arc<Notify>,
    dropped: Arc<Notify>,
}

impl Held {
    /// Says that a handler arrived, then never ends on its own; says so when it is dropped
    /// (cancelled) instead.
    pub async fn until_cancelled(&self) {
        let _guard = Guard(Arc::clone(&self.dropped));
        self.arrived.notify_one();
        std::future::pending::<()>().await;
    }

    /// Waits, at most `within`, for a handler to arrive.
    ///
    /// # Panics
    /// When none arrives within `within`.
    pub async fn arrival(&self, within: Duration) {
        tokio::time::timeout(within, self.arrived.notified())
            .await
            .expect("a handler arrives");
    }

    /// Waits, at most `within`, for a handler to be dropped unfinished.
    ///
    /// # Panics
    /// When none is dropped within `within`.
    pub async fn drop_seen(&self, within: Duration) {
        tokio::time::timeout(within, self.dropped.notified())
            .await
            .expect("the handler is dropped");
    }
}

/// Held by a handler that never ends on its own: says when it is dropped.
struct Guard(Arc<Notify>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

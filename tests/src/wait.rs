//! Waiting for what a test cannot be told about: a process that starts or stops, a shared
//! store that catches up. Everything a test controls is better awaited directly (a channel,
//! a gate, Tokio's paused clock); these poll, for the rest.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`eventually`], [`eventually_some`] and [`until`] look again.
const EVERY: Duration = Duration::from_millis(20);

/// Waits until `check` holds, looking every 20 ms, at most `within` (real time: not for a
/// test on Tokio's paused clock).
///
/// # Panics
/// When `check` does not hold within `within`; the message names `what`.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_some(what, within, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await;
}

/// Waits until `look` finds something, looking every 20 ms, at most `within` (real time: not
/// for a test on Tokio's paused clock), and gives what it found: for a check whose answer the
/// test goes on to assert on.
///
/// # Panics
/// When `look` finds nothing within `within`; the message names `what`.
pub async fn eventually_some<T, F, Fut>(what: &str, within: Duration, mut look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = look().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(EVERY).await;
    }
}

/// Blocks the thread until `check` holds, looking every 20 ms, at most `within`: whether it
/// came to hold. For code outside a runtime (starting and stopping helper processes).
#[must_use]
pub fn until(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(EVERY);
    }
}

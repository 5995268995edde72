//! Waiting for what a test cannot be told about: a process that starts or stops, a shared
//! store that catches up. Everything a test controls is better awaited directly (a channel,
//! a gate, Tokio's paused clock); these poll, for the rest.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`eventually`] and [`until`] look again.
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
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return;
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

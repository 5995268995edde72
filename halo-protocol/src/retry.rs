//! The delays between the attempts of a request, shared by halo-client's retries and
//! halo-agent's model requests so that both back off alike.
//!
//! Only the arithmetic: no clock, no sleeping, no runtime. The caller waits each delay its
//! own way and decides what is worth another attempt.

use std::time::Duration;

/// When and how often to try again: exponential backoff with full jitter, never sooner than a
/// server's `Retry-After`, within a number of attempts and a total of waiting.
///
/// The steps start at [`min_delay`](Self::min_delay) and double up to
/// [`max_delay`](Self::max_delay); each delay is a uniformly random share of its step (full
/// jitter), or the server's `Retry-After` when that is longer. The delays end after
/// [`max_attempts`](Self::max_attempts) attempts in all (so `max_attempts - 1` delays), or
/// as soon as the steps or the delays together would exceed
/// [`max_elapsed`](Self::max_elapsed).
///
/// ```
/// use std::time::Duration;
/// use halo_protocol::RetrySchedule;
///
/// let schedule = RetrySchedule::new()
///     .with_max_attempts(3)
///     .with_min_delay(Duration::from_millis(100));
/// let mut delays = schedule.delays();
/// assert!(delays.next_delay(None).unwrap() <= Duration::from_millis(100));
/// // A server's Retry-After is a floor.
/// assert!(delays.next_delay(Some(Duration::from_secs(1))).unwrap() >= Duration::from_secs(1));
/// // Three attempts: two delays.
/// assert_eq!(delays.next_delay(None), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetrySchedule {
    max_attempts: u32,
    min_delay: Duration,
    max_delay: Duration,
    max_elapsed: Duration,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        Self::new()
    }
}

impl RetrySchedule {
    /// Four attempts, steps from 100 ms doubling up to 10 s, at most 30 s of waiting.
    pub const fn new() -> Self {
        Self {
            max_attempts: 4,
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
            max_elapsed: Duration::from_secs(30),
        }
    }

    /// How many attempts in all, the first included (at least one).
    pub const fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// The first step: the first delay's upper bound.
    pub const fn with_min_delay(mut self, delay: Duration) -> Self {
        self.min_delay = delay;
        self
    }

    /// The largest step (a `Retry-After` may ask for more, within
    /// [`max_elapsed`](Self::max_elapsed)).
    pub const fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The most time spent waiting between attempts, all delays together.
    pub const fn with_max_elapsed(mut self, elapsed: Duration) -> Self {
        self.max_elapsed = elapsed;
        self
    }

    /// How many attempts in all, the first included.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The first step.
    #[must_use]
    pub const fn min_delay(&self) -> Duration {
        self.min_delay
    }

    /// The largest step.
    #[must_use]
    pub const fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// The most time spent waiting, all delays together.
    #[must_use]
    pub const fn max_elapsed(&self) -> Duration {
        self.max_elapsed
    }

    /// The delays of one request, one per retry.
    pub const fn delays(self) -> RetryDelays {
        RetryDelays {
            schedule: self,
            retries: 0,
            step: None,
            stepped: Duration::ZERO,
            waited: Duration::ZERO,
        }
    }
}

/// The delays of one request under a [`RetrySchedule`], one per retry (see
/// [`RetrySchedule::delays`]).
#[derive(Debug, Clone)]
#[must_use]
pub struct RetryDelays {
    schedule: RetrySchedule,
    /// The delays given so far.
    retries: u32,
    /// The last step, before jitter.
    step: Option<Duration>,
    /// The steps so far, together.
    stepped: Duration,
    /// The delays given so far, together.
    waited: Duration,
}

impl RetryDelays {
    /// The delay before the next attempt, never shorter than `retry_after` (a server's
    /// `Retry-After`); `None` when the schedule is spent, and from then on.
    pub fn next_delay(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        self.next_with_share(retry_after, fastrand::f64())
    }

    /// [`next_delay`](Self::next_delay) with the random share of the step (in `0..1`) given.
    fn next_with_share(&mut self, retry_after: Option<Duration>, share: f64) -> Option<Duration> {
        let schedule = self.schedule;
        if self.retries >= schedule.max_attempts - 1 {
            return None;
        }
        let step = match self.step {
            None => schedule.min_delay,
            Some(last) if last < schedule.max_delay => {
                last.saturating_mul(2).min(schedule.max_delay)
            }
            Some(last) => last.min(schedule.max_delay),
        };
        let stepped = self.stepped.saturating_add(step);
        let jittered = step.mul_f64(share);
        let delay = retry_after.map_or(jittered, |hint| hint.max(jittered));
        let waited = self.waited.saturating_add(delay);
        if stepped > schedule.max_elapsed || waited > schedule.max_elapsed {
            self.retries = schedule.max_attempts;
            return None;
        }
        self.retries += 1;
        self.step = Some(step);
        self.stepped = stepped;
        self.waited = waited;
        Some(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// The delays of `schedule` at full share (the steps themselves), with no `Retry-After`.
    fn steps(schedule: RetrySchedule) -> Vec<Duration> {
        let mut delays = schedule.delays();
        std::iter::from_fn(|| delays.next_with_share(None, 1.0)).collect()
    }

    #[test]
    fn steps_double_up_to_the_largest() {
        let schedule = RetrySchedule::new()
            .with_max_attempts(7)
            .with_min_delay(100 * MS)
            .with_max_delay(500 * MS);
        assert_eq!(
            steps(schedule),
            [100 * MS, 200 * MS, 400 * MS, 500 * MS, 500 * MS, 500 * MS]
        );
        // A first step above the largest is kept once, then brought down.
        let inverted = RetrySchedule::new()
            .with_min_delay(300 * MS)
            .with_max_delay(100 * MS);
        assert_eq!(steps(inverted), [300 * MS, 100 * MS, 100 * MS]);
        let none = RetrySchedule::new().with_max_attempts(0);
        assert_eq!(none.max_attempts(), 1);
        assert!(steps(none).is_empty());
    }

    #[test]
    fn jitter_is_a_share_of_the_step_and_retry_after_a_floor() {
        let mut delays = RetrySchedule::new().with_min_delay(100 * MS).delays();
        assert_eq!(delays.next_with_share(None, 0.25), Some(25 * MS));
        assert_eq!(delays.next_with_share(Some(MS), 0.5), Some(100 * MS));
        assert_eq!(delays.next_with_share(Some(900 * MS), 0.5), Some(900 * MS));
        assert_eq!(delays.next_with_share(None, 0.0), None, "four attempts");
        for _ in 0..100 {
            let mut delays = RetrySchedule::new().delays();
            assert!(delays.next_delay(None).unwrap() <= 100 * MS);
        }
    }

    #[test]
    fn the_total_of_waiting_is_bounded() {
        // The steps alone: 100 + 200 + 400 > 500.
        let schedule = RetrySchedule::new()
            .with_max_attempts(10)
            .with_min_delay(100 * MS)
            .with_max_elapsed(500 * MS);
        assert_eq!(steps(schedule), [100 * MS, 200 * MS]);
        // A Retry-After beyond what is left ends the schedule at once, and for good.
        let mut delays = schedule.delays();
        assert_eq!(delays.next_with_share(Some(450 * MS), 0.0), Some(450 * MS));
        assert_eq!(delays.next_with_share(Some(100 * MS), 0.0), None);
        assert_eq!(delays.next_with_share(None, 0.0), None);
    }
}

//! The one connection to Redis, made on first use and re-established when it drops, and
//! what a failure does: Redis is not tried again for a while.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script};

use super::Inner;

/// After a failure, Redis is not tried again for this long.
const PAUSE: Duration = Duration::from_secs(1);
/// How often a write Redis did not take (a held record, a mirrored event) is tried again.
pub(crate) const RETRY_EVERY: Duration = Duration::from_millis(250);

pub(crate) fn script(cell: &'static OnceLock<Script>, code: &str) -> &'static Script {
    cell.get_or_init(|| Script::new(code))
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    /// Runs `script` with `keys` and `args`, or `None` when Redis fails or is paused after a
    /// failure.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        if lock(&self.down_until).is_some_and(|until| Instant::now() < until) {
            return None;
        }
        let connection = self.connection.get_or_init(|| {
            let config = ConnectionManagerConfig::new()
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(500))
                .set_connection_timeout(Some(self.config.timeout))
                .set_response_timeout(Some(self.config.timeout));
            ConnectionManager::new_lazy_with_config(self.config.client.clone(), config)
                .inspect_err(|error| {
                    tracing::error!(target: "halo_axum::store", %error, "cannot set up the Redis connection");
                })
                .ok()
        });
        let mut connection = connection.clone()?;
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let answer = tokio::time::timeout(
            self.config.timeout,
            invocation.invoke_async(&mut connection),
        )
        .await;
        let error = match answer {
            Ok(Ok(value)) => {
                if lock(&self.down_until).take().is_some() {
                    tracing::info!(target: "halo_axum::store", "Redis answers again");
                }
                return Some(value);
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} ms", self.config.timeout.as_millis()),
        };
        let mut down = lock(&self.down_until);
        if down.is_none() {
            tracing::warn!(
                target: "halo_axum::store",
                %error,
                "Redis is unreachable; shared rate budgets and idempotency records use their fallback"
            );
        }
        *down = Some(Instant::now() + PAUSE);
        None
    }
}

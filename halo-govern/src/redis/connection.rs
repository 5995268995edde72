//! The one connection to Redis, made on first use and re-established when it drops, and
//! what a failure does: Redis is not tried again for a while.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script};

use super::Inner;

/// After a failure, Redis is not tried again for this long.
const PAUSE: Duration = Duration::from_secs(1);
/// While Redis keeps failing, a warning is logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// What an exchange with Redis was for, as the log and `halo_store_errors_total` name it:
/// the store (`rates`, `idempotency`, `circuits`, `streams`, `approvals`) and the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The store.
    pub store: &'static str,
    /// The operation.
    pub name: &'static str,
}

impl Operation {
    /// The operation `name` of `store`.
    #[must_use]
    pub const fn new(store: &'static str, name: &'static str) -> Self {
        Self { store, name }
    }
}
/// How often a write Redis did not take (a held record, a mirrored event) is tried again.
pub(crate) const RETRY_EVERY: Duration = Duration::from_millis(250);

pub(crate) fn script(cell: &'static OnceLock<Script>, code: &str) -> &'static Script {
    cell.get_or_init(|| Script::new(code))
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    /// Runs `script` with `keys` and `args` for `operation`, or `None` when Redis fails or
    /// is paused after a failure (counted in `halo_store_errors_total`, and logged at most
    /// every [`WARN_EVERY`]).
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        operation: Operation,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        let answer = self.exchange(script, keys, args).await;
        if answer.is_none() {
            metrics::counter!(
                "halo_store_errors_total",
                "store" => operation.store,
                "operation" => operation.name
            )
            .increment(1);
            let mut warned = lock(&self.warned);
            if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                *warned = Some(Instant::now());
                tracing::warn!(
                    target: "halo_axum::store",
                    store = operation.store,
                    operation = operation.name,
                    node = %self.node(),
                    "the shared store did not answer; the call uses its fallback"
                );
            }
        }
        answer
    }

    /// Whether Redis answers a `PING` now (within the store's timeout), for readiness.
    pub(crate) async fn ping(&self) -> bool {
        let Some(mut connection) = self.connection() else {
            return false;
        };
        let ping = redis::cmd("PING");
        let pong = ping.query_async::<String>(&mut connection);
        matches!(
            tokio::time::timeout(self.config.timeout, pong).await,
            Ok(Ok(answer)) if answer == "PONG"
        )
    }

    /// The node the store talks to (`host:port`), as logs name it: never the password.
    fn node(&self) -> String {
        self.config.client.get_connection_info().addr().to_string()
    }

    /// The connection, made on first use.
    fn connection(&self) -> Option<ConnectionManager> {
        self.connection
            .get_or_init(|| {
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
            })
            .clone()
    }

    /// One exchange: the script's answer, or `None` (Redis failed, or is paused).
    async fn exchange<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        if lock(&self.down_until).is_some_and(|until| Instant::now() < until) {
            return None;
        }
        let mut connection = self.connection()?;
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

//! The one connection to Redis (a server or a cluster, [`target`](super::target)), made on
//! first use and re-established when it drops, and what a failure does: Redis is not tried
//! again for a while for the failed script's hash slot (all of a single server).

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use redis::{FromRedisValue, Script};
use tracing::Instrument as _;

use super::Inner;
use super::keys;
use super::target::{self, Connection};

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
        // A cluster's nodes fail one at a time: only the slot of a failed script is paused.
        // One server has one slot.
        let slot = match keys.first() {
            Some(key) if self.config.target.is_cluster() => keys::slot(key.as_bytes()),
            _ => 0,
        };
        let answer = self.exchange(slot, script, keys, args).await;
        if answer.is_none() {
            metrics::counter!(
                "halo_store_errors_total",
                "store" => operation.store,
                "operation" => operation.name
            )
            .increment(1);
            let due = {
                let mut warned = lock(&self.warned);
                let due = warned.is_none_or(|at| at.elapsed() >= WARN_EVERY);
                if due {
                    *warned = Some(Instant::now());
                }
                due
            };
            if due {
                self.warn(operation, slot);
            }
        }
        answer
    }

    /// Whether Redis answers a `PING` now (every node of a cluster, within the store's
    /// timeout), for readiness.
    pub(crate) async fn ping(&self) -> bool {
        let pong = async {
            let mut connection = self.connection().await?;
            target::ping(&mut connection).await
        };
        matches!(
            tokio::time::timeout(self.config.timeout, pong).await,
            Ok(Ok(true))
        )
    }

    /// Logs that `operation` failed, naming the node (`host:port`, never a password): the
    /// server, or the node that the cluster's slot map says holds `slot` (`slot N of the
    /// cluster` when no node answers for the map). The map is asked for by a task of its
    /// own (in the call's span), so the failed call does not wait for it.
    fn warn(&self, operation: Operation, slot: u16) {
        let log = move |node: &str| {
            tracing::warn!(
                target: "halo_axum::store",
                store = operation.store,
                operation = operation.name,
                node = %node,
                "the shared store did not answer; the call uses its fallback"
            );
        };
        if let Some(server) = self.config.target.server() {
            log(&server);
            return;
        }
        let connection = self.connection.get().cloned();
        let timeout = self.config.timeout;
        tokio::spawn(
            async move {
                let holder = async {
                    let mut connection = connection?;
                    target::holder(&mut connection, slot).await
                };
                let node = tokio::time::timeout(timeout, holder)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| format!("slot {slot} of the cluster"));
                log(&node);
            }
            .in_current_span(),
        );
    }

    /// The connection, made on first use (again after a cluster could not be reached).
    async fn connection(&self) -> redis::RedisResult<Connection> {
        self.connection
            .get_or_try_init(|| self.config.target.connect(self.config.timeout))
            .await
            .cloned()
    }

    /// One exchange: the script's answer, or `None` (Redis failed, or is paused).
    async fn exchange<T: FromRedisValue>(
        &self,
        slot: u16,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        if lock(&self.down_until)
            .get(&slot)
            .is_some_and(|until| Instant::now() < *until)
        {
            return None;
        }
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let answer = tokio::time::timeout(self.config.timeout, async {
            let mut connection = self.connection().await?;
            invocation.invoke_async(&mut connection).await
        })
        .await;
        let error = match answer {
            Ok(Ok(value)) => {
                let mut down = lock(&self.down_until);
                if down.remove(&slot).is_some() && down.is_empty() {
                    tracing::info!(target: "halo_axum::store", "Redis answers again");
                }
                return Some(value);
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} ms", self.config.timeout.as_millis()),
        };
        let now = Instant::now();
        let mut down = lock(&self.down_until);
        down.retain(|_, until| *until > now);
        if down.is_empty() {
            tracing::warn!(
                target: "halo_axum::store",
                %error,
                "Redis is unreachable; shared rate budgets and idempotency records use their fallback"
            );
        }
        // At most one pause per slot is kept, and those that are over are forgotten.
        down.insert(slot, now + PAUSE);
        None
    }
}

//! [`Reloading`]: a gateway that rebuilds itself when its configuration file changes or the
//! process gets `SIGHUP`, off the request path, and swaps the new one in atomically.
//!
//! Calls in flight finish on the gateway they started on (each holds it); new calls go to the
//! new one. A file that cannot be read or built leaves the running gateway serving, and says
//! why in the log and in the count of failed reloads. The new gateway keeps the old one's
//! state ([`Gateway::build_after`]): rate budgets and circuits of tools whose declarations did
//! not change, and idempotency records; in Redis they are keyed by tool name anyway.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use axum::Router;
use axum::body::Body;
use http::Request;

use crate::config::Config;
use crate::error::Error;
use crate::gateway::Gateway;
use crate::report::Report;

/// A gateway served from a configuration file, rebuilt when the file changes.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use halo_gateway::Reloading;
///
/// let gateway = Reloading::start("gateway.yaml").await?;
/// tokio::spawn(gateway.clone().watch(Duration::from_secs(1)));
/// let listener = tokio::net::TcpListener::bind(gateway.listen()).await?;
/// axum::serve(listener, gateway.router()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Reloading {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    listen: SocketAddr,
    current: Arc<ArcSwap<Router>>,
    /// The gateway serving, whose state the next one keeps.
    gateway: ArcSwap<Gateway>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    /// The stamp of the file when it was last read, and those of the files it names (pins,
    /// a Harness policy document).
    stamp: std::sync::Mutex<(Stamp, Vec<(PathBuf, Stamp)>)>,
}

/// A file's modification time and length, when it can be read.
type Stamp = Option<(SystemTime, u64)>;

impl Reloading {
    /// Reads the configuration at `path` and builds the first gateway.
    ///
    /// # Errors
    /// As [`Config::from_path`] and [`Gateway::build`].
    pub async fn start(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_owned();
        let stamp = stamp(&path);
        let config = Config::from_path(&path)?;
        let named = named(&config);
        let gateway = Gateway::build(&config).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                listen: config.listen(),
                current: Arc::new(ArcSwap::from_pointee(gateway.router())),
                gateway: ArcSwap::from_pointee(gateway),
                reloading: tokio::sync::Mutex::new(()),
                stamp: std::sync::Mutex::new((stamp, named)),
                path,
            }),
        })
    }

    /// The address the first configuration named (a changed `listen` needs a restart).
    #[must_use]
    pub fn listen(&self) -> SocketAddr {
        self.inner.listen
    }

    /// What the gateway now serving was built from.
    #[must_use]
    pub fn report(&self) -> Report {
        self.inner.gateway.load().report().clone()
    }

    /// The app to serve: each request goes to the gateway serving when it arrives.
    pub fn router(&self) -> Router {
        let current = Arc::clone(&self.inner.current);
        Router::new().fallback_service(tower::service_fn(move |request: Request<Body>| {
            // The router serving now; the request keeps it until it is answered.
            let router = Router::clone(&current.load());
            tower::ServiceExt::oneshot(router, request)
        }))
    }

    /// Reads the file again and, when it builds, serves the new gateway.
    ///
    /// # Errors
    /// As [`Reloading::start`]; the gateway serving goes on serving.
    pub async fn reload(&self) -> Result<Report, Error> {
        let inner = &self.inner;
        let _one = inner.reloading.lock().await;
        // Noted before reading: files that do not build are not read again until they change.
        {
            let mut known = inner.stamp.lock().unwrap_or_else(|e| e.into_inner());
            known.0 = stamp(&inner.path);
            for (path, was) in &mut known.1 {
                *was = stamp(path);
            }
        }
        let built = async {
            let config = Config::from_path(&inner.path)?;
            inner.stamp.lock().unwrap_or_else(|e| e.into_inner()).1 = named(&config);
            if config.listen() != inner.listen {
                tracing::warn!(
                    listen = %config.listen(),
                    serving = %inner.listen,
                    "`listen` changed; it takes effect when the gateway is restarted"
                );
            }
            let previous = inner.gateway.load_full();
            Gateway::build_after(&config, &previous).await
        }
        .await;
        match built {
            Ok(gateway) => {
                inner.current.store(Arc::new(gateway.router()));
                let report = gateway.report().clone();
                inner.gateway.store(Arc::new(gateway));
                metrics::counter!("halo_gateway_reloads_total", "outcome" => "ok").increment(1);
                tracing::info!(tools = report.tools(), "configuration reloaded");
                Ok(report)
            }
            Err(error) => {
                metrics::counter!("halo_gateway_reloads_total", "outcome" => "failed").increment(1);
                tracing::error!(%error, "configuration not reloaded; the gateway serving goes on");
                Err(error)
            }
        }
    }

    /// Reloads whenever the modification time or length of the file (or of a file it names:
    /// pins, a Harness policy document) changes
    /// (checked every `every`), when an upstream says its tools changed (an MCP server's
    /// `list_changed`) and, on Unix, on `SIGHUP`. Runs until the process ends.
    pub async fn watch(self, every: Duration) {
        #[cfg(unix)]
        let mut hangups =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            #[cfg(unix)]
            let hangup = async {
                match hangups.as_mut() {
                    Some(signals) => signals.recv().await,
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let hangup = std::future::pending::<Option<()>>();
            let serving = self.inner.gateway.load_full();
            let asked = tokio::select! {
                _ = ticks.tick() => false,
                _ = hangup => true,
                () = serving.tools_changed() => {
                    tracing::info!("an upstream's tools changed; rebuilding");
                    true
                }
            };
            let changed = {
                let known = self.inner.stamp.lock().unwrap_or_else(|e| e.into_inner());
                let (config, named) = &*known;
                stamp(&self.inner.path) != *config
                    || named.iter().any(|(path, was)| stamp(path) != *was)
            };
            if asked || changed {
                let _ = self.reload().await;
            }
        }
    }
}

/// The files `config` names that a change of should reload it, with their stamps now.
fn named(config: &Config) -> Vec<(PathBuf, Stamp)> {
    [&config.pins, &config.policy_file]
        .into_iter()
        .flatten()
        .map(|path| (path.clone(), stamp(path)))
        .collect()
}

/// The file's modification time and length, when it can be read.
fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

//! Ctrl-C: waiting for it, and the exit status of a command it interrupted. `halo call`
//! (which then withdraws the approval its call waits for) and `halo stream` (which cancels
//! its call) both listen for it.

use futures_util::future;

/// The exit status of a command interrupted by Ctrl-C (128 + SIGINT), as a shell gives it.
pub(crate) const INTERRUPTED: u8 = 130;

/// The next Ctrl-C (a signal that cannot be listened for never comes).
pub(crate) async fn interrupted() {
    if tokio::signal::ctrl_c().await.is_err() {
        future::pending::<()>().await;
    }
}

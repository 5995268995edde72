//! What the app logs (`tracing`) while a test runs, as text.

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// The log lines written since [`capture`].
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps what is logged on this thread (every level, no colours) until the guard drops. A
/// `#[tokio::test]` runs the app on its own thread (a current-thread runtime), tasks it
/// spawns included, so this is the app's whole log.
pub fn capture() -> (Log, DefaultGuard) {
    let log = Log::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let log = log.clone();
            move || log.clone()
        })
        .with_ansi(false)
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}

//! [`JsonLinesSink`]: audit records appended to a file, one JSON object a line, by a
//! background thread.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::thread::{self, JoinHandle};

use super::{AuditRecord, AuditSink};

/// How many records may wait for the writer unless
/// [`JsonLinesSinkBuilder::capacity`] says otherwise.
const DEFAULT_CAPACITY: usize = 8192;

/// An [`AuditSink`] that appends each record to a file as one line of JSON ([JSON
/// Lines](https://jsonlines.org)), in the order the records were taken.
///
/// The file is opened (created if missing, appended to if not) when the sink is, so a bad
/// path fails at start-up. Records are written by a dedicated thread: [`record`](
/// AuditSink::record) only puts the record in a bounded queue, never blocks and does no I/O.
/// When the queue is full the record is dropped and counted in [`dropped`](
/// JsonLinesSink::dropped). The writer buffers its writes and flushes them whenever the
/// queue is momentarily empty.
///
/// The sink is cheap to clone: clones share the file, queue and writer. When the last clone
/// is dropped the writer writes what is queued, flushes, and stops; that drop waits for it.
///
/// ```
/// use halo_axum::{AuditSink, JsonLinesSink};
///
/// # fn main() -> std::io::Result<()> {
/// let path = std::env::temp_dir().join(format!("halo-audit-doc-{}.jsonl", std::process::id()));
/// let sink = JsonLinesSink::builder().capacity(1024).open(&path)?;
/// assert_eq!(sink.path(), path);
/// sink.flush(); // blocks until what was recorded so far is written
/// assert_eq!(sink.dropped(), 0);
/// # drop(sink);
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct JsonLinesSink {
    inner: Arc<Inner>,
}

/// What clones of a sink share. Dropping it closes the queue and waits for the writer.
struct Inner {
    path: PathBuf,
    queue: Option<SyncSender<Message>>,
    dropped: Arc<AtomicU64>,
    writer: Option<JoinHandle<()>>,
}

/// What the writer is asked to do.
enum Message {
    /// Write a record (boxed, so the queue's slots stay small).
    Record(Box<AuditRecord>),
    /// Flush, then answer.
    Flush(SyncSender<()>),
}

impl JsonLinesSink {
    /// A sink appending to the file at `path` (created if missing), with a queue of 8192
    /// records.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened for appending, or the writer thread cannot start.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::builder().open(path)
    }

    /// A builder, to set the size of the queue before opening the file.
    pub fn builder() -> JsonLinesSinkBuilder {
        JsonLinesSinkBuilder::default()
    }

    /// The path the sink was opened with.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many records were not written: dropped because the queue was full, or lost to a
    /// write error (which is also reported as a `tracing` warning).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Blocks until every record taken before the call is written and flushed to the file.
    ///
    /// For tests and shutdown: never call it on the request path (nor on an async runtime
    /// thread without `spawn_blocking`).
    pub fn flush(&self) {
        let Some(queue) = &self.inner.queue else {
            return;
        };
        let (done, wait) = mpsc::sync_channel(1);
        if queue.send(Message::Flush(done)).is_ok() {
            // An error means the writer is gone: there is nothing left to wait for.
            let _ = wait.recv();
        }
    }
}

impl AuditSink for JsonLinesSink {
    fn record(&self, record: AuditRecord) {
        let Some(queue) = &self.inner.queue else {
            return;
        };
        match queue.try_send(Message::Record(Box::new(record))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesSink")
            .field("path", &self.inner.path)
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer drain it, flush and return.
        drop(self.queue.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Opens a [`JsonLinesSink`] with settings other than the defaults.
///
/// ```
/// use halo_axum::JsonLinesSink;
///
/// # fn main() -> std::io::Result<()> {
/// # let path = std::env::temp_dir().join(format!("halo-audit-builder-{}.jsonl", std::process::id()));
/// let sink = JsonLinesSink::builder().capacity(65_536).open(&path)?;
/// # drop(sink);
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use]
pub struct JsonLinesSinkBuilder {
    capacity: usize,
    /// Test hook: the writer waits for a message here (or its sender's drop) before it takes
    /// anything from the queue.
    #[cfg(test)]
    gate: Option<Receiver<()>>,
}

impl Default for JsonLinesSinkBuilder {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            #[cfg(test)]
            gate: None,
        }
    }
}

impl JsonLinesSinkBuilder {
    /// How many records may wait for the writer before further ones are dropped (default
    /// 8192; at least 1).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// Opens the file at `path` for appending (creating it if missing) and starts the
    /// writer thread.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened for appending, or the writer thread cannot start.
    pub fn open(self, path: impl AsRef<Path>) -> io::Result<JsonLinesSink> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let (queue, receiver) = mpsc::sync_channel(self.capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut writer = Writer {
            out: BufWriter::new(file),
            line: Vec::with_capacity(512),
            unflushed: 0,
            failing: false,
            path: path.clone(),
            dropped: Arc::clone(&dropped),
        };
        #[cfg(test)]
        let gate = self.gate;
        let writer = thread::Builder::new()
            .name("halo-audit-jsonl".to_owned())
            .spawn(move || {
                #[cfg(test)]
                if let Some(gate) = gate {
                    let _ = gate.recv();
                }
                writer.run(&receiver);
            })?;
        Ok(JsonLinesSink {
            inner: Arc::new(Inner {
                path,
                queue: Some(queue),
                dropped,
                writer: Some(writer),
            }),
        })
    }
}

/// The writer thread's state.
struct Writer {
    out: BufWriter<File>,
    /// One serialised record, reused.
    line: Vec<u8>,
    /// Records written to the buffer since the last successful flush.
    unflushed: u64,
    /// Whether the last write or flush failed (so a run of failures is reported once).
    failing: bool,
    path: PathBuf,
    dropped: Arc<AtomicU64>,
}

impl Writer {
    /// Writes what comes until the queue is closed and empty, flushing whenever it is
    /// momentarily empty, and at the end.
    fn run(&mut self, receiver: &Receiver<Message>) {
        loop {
            let message = match receiver.try_recv() {
                Ok(message) => message,
                Err(TryRecvError::Empty) => {
                    self.flush();
                    match receiver.recv() {
                        Ok(message) => message,
                        Err(_) => break,
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match message {
                Message::Record(record) => self.write(&record),
                Message::Flush(done) => {
                    self.flush();
                    let _ = done.send(());
                }
            }
        }
        self.flush();
    }

    fn write(&mut self, record: &AuditRecord) {
        self.line.clear();
        let written = serde_json::to_writer(&mut self.line, record)
            .map_err(io::Error::from)
            .and_then(|()| {
                self.line.push(b'\n');
                self.out.write_all(&self.line)
            });
        match written {
            Ok(()) => self.unflushed += 1,
            Err(error) => self.lost(1, &error),
        }
    }

    fn flush(&mut self) {
        if self.unflushed == 0 {
            return;
        }
        match self.out.flush() {
            Ok(()) => {
                self.unflushed = 0;
                self.failing = false;
            }
            Err(error) => {
                let lost = std::mem::take(&mut self.unflushed);
                self.lost(lost, &error);
            }
        }
    }

    /// Counts `count` records as dropped, and reports the first error of a run.
    fn lost(&mut self, count: u64, error: &io::Error) {
        self.dropped.fetch_add(count, Ordering::Relaxed);
        if !self.failing {
            self.failing = true;
            tracing::warn!(
                target: "halo_axum::audit",
                path = %self.path.display(),
                %error,
                "audit records could not be written"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, UNIX_EPOCH};

    use http::{HeaderMap, Method, StatusCode};
    use serde_json::Value;

    use super::*;
    use crate::audit::Outcome;

    /// A file path unique to the test, removed when dropped.
    struct TempPath(PathBuf);

    impl TempPath {
        fn new(name: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let file = format!("halo-audit-{name}-{}-{n}.jsonl", std::process::id());
            let path = std::env::temp_dir().join(file);
            let _ = std::fs::remove_file(&path);
            Self(path)
        }

        fn lines(&self) -> Vec<Value> {
            std::fs::read_to_string(&self.0)
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn record(tool: &str, n: usize) -> AuditRecord {
        let mut record = AuditRecord::new(&HeaderMap::new(), tool, &Method::POST, "/api/x");
        record.time = UNIX_EPOCH + Duration::from_secs(1_796_062_021);
        record.request_id = format!("r-{n}");
        record.finish(StatusCode::OK, Outcome::Executed, Duration::from_millis(2));
        record
    }

    fn request_ids(lines: &[Value]) -> Vec<String> {
        lines
            .iter()
            .map(|line| line["request_id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn writes_records_as_lines_in_order() {
        let path = TempPath::new("order");
        let sink = JsonLinesSink::open(&path.0).unwrap();
        for n in 0..100 {
            sink.record(record("charge", n));
        }
        sink.flush();
        let lines = path.lines();
        assert_eq!(lines.len(), 100);
        let expected: Vec<String> = (0..100).map(|n| format!("r-{n}")).collect();
        assert_eq!(request_ids(&lines), expected);
        assert_eq!(lines[0]["tool"], "charge");
        assert_eq!(lines[0]["time"], "2026-11-30T18:07:01.000Z");
        assert_eq!(lines[0]["outcome"], "executed");
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn dropping_the_last_clone_drains_and_flushes() {
        let path = TempPath::new("drop");
        let sink = JsonLinesSink::open(&path.0).unwrap();
        let clone = sink.clone();
        for n in 0..50 {
            clone.record(record("charge", n));
        }
        drop(clone);
        for n in 50..60 {
            sink.record(record("charge", n));
        }
        drop(sink);
        assert_eq!(path.lines().len(), 60);
    }

    #[test]
    fn concurrent_records_all_arrive() {
        const THREADS: usize = 4;
        const EACH: usize = 250;
        let path = TempPath::new("concurrent");
        let sink = JsonLinesSink::open(&path.0).unwrap();
        thread::scope(|scope| {
            for t in 0..THREADS {
                let sink = sink.clone();
                scope.spawn(move || {
                    for n in 0..EACH {
                        sink.record(record(&format!("tool-{t}"), n));
                    }
                });
            }
        });
        sink.flush();
        assert_eq!(sink.dropped(), 0);
        let lines = path.lines();
        assert_eq!(lines.len(), THREADS * EACH);
        // Each thread's records arrive in the order it sent them.
        for t in 0..THREADS {
            let tool = format!("tool-{t}");
            let ids: Vec<String> = request_ids(
                &lines
                    .iter()
                    .filter(|line| line["tool"] == tool.as_str())
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            let expected: Vec<String> = (0..EACH).map(|n| format!("r-{n}")).collect();
            assert_eq!(ids, expected, "{tool}");
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let path = TempPath::new("full");
        let (open_gate, gate) = mpsc::channel();
        let builder = JsonLinesSink::builder().capacity(1);
        let sink = JsonLinesSinkBuilder {
            gate: Some(gate),
            ..builder
        }
        .open(&path.0)
        .unwrap();
        // The writer takes nothing yet: the first record fills the queue.
        sink.record(record("charge", 0));
        sink.record(record("charge", 1));
        sink.record(record("charge", 2));
        assert_eq!(sink.dropped(), 2);
        open_gate.send(()).unwrap();
        sink.flush();
        assert_eq!(request_ids(&path.lines()), ["r-0"]);
        // With the writer running, there is room again.
        sink.record(record("charge", 3));
        sink.flush();
        assert_eq!(request_ids(&path.lines()), ["r-0", "r-3"]);
        assert_eq!(sink.dropped(), 2);
    }

    #[test]
    fn reopening_appends() {
        let path = TempPath::new("append");
        let sink = JsonLinesSink::open(&path.0).unwrap();
        sink.record(record("charge", 0));
        sink.record(record("charge", 1));
        drop(sink);
        let sink = JsonLinesSink::open(&path.0).unwrap();
        sink.record(record("charge", 2));
        drop(sink);
        assert_eq!(request_ids(&path.lines()), ["r-0", "r-1", "r-2"]);
    }

    #[test]
    fn a_bad_path_fails_at_open() {
        let path = std::env::temp_dir()
            .join("halo-audit-no-such-directory")
            .join("audit.jsonl");
        assert!(JsonLinesSink::open(path).is_err());
    }

    #[test]
    fn capacity_is_at_least_one() {
        assert_eq!(JsonLinesSink::builder().capacity(0).capacity, 1);
        assert_eq!(JsonLinesSink::builder().capacity, DEFAULT_CAPACITY);
    }

    #[test]
    fn debug_shows_path_and_dropped() {
        let path = TempPath::new("debug");
        let sink = JsonLinesSink::open(&path.0).unwrap();
        let debug = format!("{sink:?}");
        assert!(debug.starts_with("JsonLinesSink { path: "), "{debug}");
        assert!(debug.contains("dropped: 0"), "{debug}");
        assert_eq!(sink.path(), path.0);
    }
}

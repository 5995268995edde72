//! The audit trail of executed tool calls: one [`AuditRecord`] per call of a described
//! operation that reached the layer's checks, handed to an [`AuditSink`].
//!
//! Two sinks come with the crate: [`TracingSink`] emits each record as a `tracing` event,
//! and [`JsonLinesSink`] appends each to a file as one line of JSON, from a background
//! thread. Arguments are not recorded unless the application opts in with
//! `HaloBuilder::audit_arguments(true)`, and even then sensitive ones are redacted (see
//! [`AuditRecord::arguments`]).

mod jsonl;
mod record;

use std::sync::Arc;

use halo_protocol::Rfc3339;

pub use self::jsonl::{JsonLinesSink, JsonLinesSinkBuilder};
pub(crate) use self::record::redact;
use self::record::round_millis;
pub use self::record::{AuditRecord, Outcome};

/// Where audit records go.
///
/// [`record`](AuditSink::record) is called on the request path, once per call, after the
/// answer is known: it must not block or do I/O inline. Hand the record to something that
/// does (a channel, a background task), as [`JsonLinesSink`] does.
///
/// A shared sink is an `Arc` of one: `Arc<T>` and `Arc<dyn AuditSink>` are sinks too.
///
/// ```
/// use std::sync::Mutex;
///
/// use halo_axum::{AuditRecord, AuditSink, Outcome};
///
/// /// Counts the calls that were refused.
/// #[derive(Debug, Default)]
/// struct Refusals(Mutex<u64>);
///
/// impl AuditSink for Refusals {
///     fn record(&self, record: AuditRecord) {
///         if record.outcome != Outcome::Executed && record.outcome != Outcome::Replayed {
///             *self.0.lock().unwrap() += 1;
///         }
///     }
/// }
/// ```
pub trait AuditSink: Send + Sync + 'static {
    /// Takes one record. Called on the request path: must not block.
    fn record(&self, record: AuditRecord);
}

impl<T: AuditSink + ?Sized> AuditSink for Arc<T> {
    fn record(&self, record: AuditRecord) {
        (**self).record(record);
    }
}

impl std::fmt::Debug for dyn AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditSink")
    }
}

/// An [`AuditSink`] that emits each record as one `tracing` event at `INFO` level, with
/// target `halo_axum::audit` and the record's fields as structured fields (absent options
/// are left out; `arguments`, when present, is compact JSON).
///
/// Route or filter the events with the subscriber, e.g. `RUST_LOG=halo_axum::audit=info`
/// with `tracing-subscriber`'s `EnvFilter`.
///
/// ```
/// use halo_axum::{AuditSink, TracingSink};
///
/// fn takes(_: impl AuditSink) {}
/// takes(TracingSink);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingSink;

impl AuditSink for TracingSink {
    fn record(&self, record: AuditRecord) {
        tracing::info!(
            target: "halo_axum::audit",
            time = %Rfc3339(record.time),
            request_id = record.request_id,
            trace_id = record.trace_id,
            caller = record.caller,
            tool = record.tool,
            method = record.method,
            path = record.path,
            status = record.status,
            latency_ms = round_millis(record.latency_ms),
            idempotency_key = record.idempotency_key,
            outcome = record.outcome.as_str(),
            decided_by = record.decided_by,
            arguments = record.arguments.as_ref().map(tracing::field::display),
            "tool call",
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::{Duration, UNIX_EPOCH};

    use http::{HeaderMap, HeaderValue, Method, StatusCode};
    use serde_json::json;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use super::*;

    /// The events seen: target, level and fields (name, value as text).
    type Seen = Arc<Mutex<Vec<(String, tracing::Level, Vec<(String, String)>)>>>;

    /// A subscriber that keeps every event.
    struct Keep(Seen);

    struct Fields(Vec<(String, String)>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }

        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().to_owned(), value.to_owned()));
        }
    }

    impl Subscriber for Keep {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields(Vec::new());
            event.record(&mut fields);
            let meta = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push((meta.target().to_owned(), *meta.level(), fields.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn record() -> AuditRecord {
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", HeaderValue::from_static("r-1"));
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let mut record = AuditRecord::new(&headers, "charge", &Method::POST, "/api/charge");
        record.time = UNIX_EPOCH + Duration::from_millis(1_796_062_021_123);
        record.caller = Some("admin".into());
        record.finish(
            StatusCode::OK,
            Outcome::Executed,
            Duration::from_micros(1500),
        );
        record
    }

    #[test]
    fn tracing_sink_emits_one_event_with_the_fields() {
        let seen = Seen::default();
        let mut with_arguments = record();
        with_arguments.arguments = Some(json!({"order_id": 7}));
        tracing::subscriber::with_default(Keep(seen.clone()), || {
            TracingSink.record(record());
            TracingSink.record(with_arguments);
        });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        let (target, level, fields) = &seen[0];
        assert_eq!(target, "halo_axum::audit");
        assert_eq!(*level, tracing::Level::INFO);
        let get = |fields: &[(String, String)], name: &str| {
            fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get(fields, "time").as_deref(),
            Some("2026-11-30T18:07:01.123Z")
        );
        assert_eq!(get(fields, "request_id").as_deref(), Some("r-1"));
        assert_eq!(
            get(fields, "trace_id").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(get(fields, "caller").as_deref(), Some("admin"));
        assert_eq!(get(fields, "tool").as_deref(), Some("charge"));
        assert_eq!(get(fields, "method").as_deref(), Some("POST"));
        assert_eq!(get(fields, "path").as_deref(), Some("/api/charge"));
        assert_eq!(get(fields, "status").as_deref(), Some("200"));
        assert_eq!(get(fields, "latency_ms").as_deref(), Some("1.5"));
        assert_eq!(get(fields, "outcome").as_deref(), Some("executed"));
        assert_eq!(get(fields, "message").as_deref(), Some("tool call"));
        // Absent options are left out.
        assert_eq!(get(fields, "idempotency_key"), None);
        assert_eq!(get(fields, "arguments"), None);
        assert_eq!(
            get(&seen[1].2, "arguments").as_deref(),
            Some(r#"{"order_id":7}"#)
        );
    }

    #[derive(Debug, Default)]
    struct Collect(Mutex<Vec<AuditRecord>>);

    impl AuditSink for Collect {
        fn record(&self, record: AuditRecord) {
            self.0.lock().unwrap().push(record);
        }
    }

    #[test]
    fn shared_sinks_are_sinks() {
        fn takes(sink: impl AuditSink) -> impl AuditSink {
            sink
        }
        let collect = Arc::new(Collect::default());
        let shared: Arc<dyn AuditSink> = collect.clone();
        shared.record(record());
        collect.record(record());
        takes(shared).record(record());
        assert_eq!(collect.0.lock().unwrap().len(), 3);
    }
}

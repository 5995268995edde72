//! One [`AuditRecord`] per call, what became of it ([`Outcome`]), and what the layer reads
//! from a request to fill one: its request id, its W3C trace id, and which arguments to hide.

use std::fmt;
use std::time::{Duration, SystemTime};

use halo_protocol::Rfc3339;
use http::{HeaderMap, Method, StatusCode};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// What happened to a call.
///
/// It serialises in `snake_case` (`"rate_limited"`), as [`Outcome::as_str`] spells it.
///
/// ```
/// use halo_axum::Outcome;
///
/// assert_eq!(Outcome::RateLimited.as_str(), "rate_limited");
/// assert_eq!(Outcome::TimedOut.to_string(), "timed_out");
/// assert_eq!(Outcome::CircuitOpen.as_str(), "circuit_open");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The handler ran; `status` is what it answered.
    Executed,
    /// The answer stored under the call's idempotency key was sent again; the handler did
    /// not run.
    Replayed,
    /// The caller was over the tool's declared rate, or held as many idempotency records as
    /// it may (`429`).
    RateLimited,
    /// The caller was not authenticated (`401`) or not allowed to call the tool (`403`).
    Denied,
    /// The call was refused before the handler ran: its arguments did not validate, its
    /// idempotency key was misused, or (a held call approved after the layer was built
    /// again) its tool is no longer served (`410`).
    Invalid,
    /// The handler did not answer within the tool's deadline.
    TimedOut,
    /// The call was refused with `503` before the handler ran: a shared store (rate budgets,
    /// idempotency records) could not be reached, the idempotency records were full, or the
    /// layer was at its limit of calls.
    Unavailable,
    /// The call was refused with `503` before the handler ran: the tool's circuit was open
    /// (its calls kept failing) or half-open with its one probe call running.
    CircuitOpen,
    /// The call was held for approval (`202 Accepted`): the handler has not run.
    ApprovalRequested,
    /// An approver approved the held call ([`decided_by`](AuditRecord::decided_by)); the
    /// record of its run follows.
    Approved,
    /// An approver denied the held call ([`decided_by`](AuditRecord::decided_by)); it never
    /// runs.
    ApprovalDenied,
    /// Nobody decided the held call in time: it counts as denied and never runs.
    ApprovalExpired,
    /// The call was cancelled while it ran (`DELETE /.well-known/halo/calls/{call_id}`): a
    /// call without a stream, answered `409` instead of its handler's answer, and the cancel
    /// request itself (`204`, its caller the one who cancelled). Also a held call withdrawn
    /// before anyone decided it (`409`; [`decided_by`](AuditRecord::decided_by) is who
    /// withdrew it): it never runs.
    Cancelled,
}

impl Outcome {
    /// The outcome as it is serialised: `"executed"`, `"replayed"`, `"rate_limited"`,
    /// `"denied"`, `"invalid"`, `"timed_out"`, `"unavailable"`, `"circuit_open"`,
    /// `"approval_requested"`, `"approved"`, `"approval_denied"`, `"approval_expired"` or
    /// `"cancelled"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Replayed => "replayed",
            Self::RateLimited => "rate_limited",
            Self::Denied => "denied",
            Self::Invalid => "invalid",
            Self::TimedOut => "timed_out",
            Self::Unavailable => "unavailable",
            Self::CircuitOpen => "circuit_open",
            Self::ApprovalRequested => "approval_requested",
            Self::Approved => "approved",
            Self::ApprovalDenied => "approval_denied",
            Self::ApprovalExpired => "approval_expired",
            Self::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One audit record: one per call of a described operation that reached the layer's checks.
///
/// The layer builds it and hands it to the [`AuditSink`](crate::AuditSink). Serialised (as
/// [`JsonLinesSink`](crate::JsonLinesSink) writes it), one record reads:
///
/// ```json
/// {"time":"2026-11-30T18:07:01.123Z","request_id":"4f1c…","trace_id":null,"caller":"admin",
///  "tool":"charge","method":"POST","path":"/api/payments/charge","status":200,
///  "latency_ms":12.345,"idempotency_key":"k-7","outcome":"executed"}
/// ```
///
/// `time` is RFC 3339 in UTC to the millisecond, `latency_ms` has at most three decimals,
/// absent options are `null`, and `arguments` is left out unless present.
#[non_exhaustive]
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// When the call reached the layer. Serialised as RFC 3339 in UTC with milliseconds,
    /// e.g. `"2026-11-30T18:07:01.123Z"` (see [`AuditRecord::time_rfc3339`]).
    #[serde(serialize_with = "serialize_time")]
    pub time: SystemTime,
    /// The request's `x-request-id` when it has a sane one (1 to 128 visible ASCII
    /// characters), else a generated UUID v4.
    pub request_id: String,
    /// The 32-hex-digit trace id of a valid W3C `traceparent` header, if the request had one.
    pub trace_id: Option<String>,
    /// The id of the authenticated [`Principal`](crate::Principal); `None` when anonymous.
    pub caller: Option<String>,
    /// The tool's name in the manifest.
    pub tool: String,
    /// The HTTP method.
    pub method: String,
    /// The request path, never its query (which may carry secrets).
    pub path: String,
    /// The status of the answer.
    pub status: u16,
    /// How long the call took in the layer, in milliseconds. Serialised with at most three
    /// decimals.
    #[serde(serialize_with = "serialize_latency")]
    pub latency_ms: f64,
    /// The value of the tool's idempotency key header, if the call carried one.
    pub idempotency_key: Option<String>,
    /// What became of the call.
    pub outcome: Outcome,
    /// Who approved or denied a held call (the approver's principal id, or the name an
    /// [`Approver`](crate::Approver) gave), on the records of decisions; left out of the
    /// serialised record when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// The call's arguments: `None` unless the application opted in with
    /// `HaloBuilder::audit_arguments(true)`, and left out of the serialised record when
    /// `None`. Even then the value of every input entry whose schema says
    /// `"writeOnly": true` or `"format": "password"` is replaced by `"[redacted]"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl AuditRecord {
    /// A record of a call of `tool` reaching the layer now, with the request id and trace id
    /// of `headers`. The layer fills in the caller, key and arguments as it learns them, and
    /// ends it with [`AuditRecord::finish`].
    pub(crate) fn new(
        headers: &HeaderMap,
        tool: impl Into<String>,
        method: &Method,
        path: &str,
    ) -> Self {
        Self {
            time: SystemTime::now(),
            request_id: request_id(headers),
            trace_id: trace_id(headers),
            caller: None,
            tool: tool.into(),
            method: method.as_str().to_owned(),
            path: path.to_owned(),
            status: 0,
            latency_ms: 0.0,
            idempotency_key: None,
            outcome: Outcome::Executed,
            decided_by: None,
            arguments: None,
        }
    }

    /// Records how the call ended: its answer's status, its outcome, and how long it took.
    pub(crate) fn finish(&mut self, status: StatusCode, outcome: Outcome, elapsed: Duration) {
        self.status = status.as_u16();
        self.outcome = outcome;
        self.latency_ms = elapsed.as_secs_f64() * 1000.0;
    }

    /// Records a call's arguments with the `sensitive` ones (see [`sensitive`]) redacted: its
    /// body as validation parsed it (`parsed`) or, when the fast check vouched for the body
    /// without parsing it, as `read`.
    pub(crate) fn note_arguments(
        &mut self,
        sensitive: &[String],
        parsed: Option<&Value>,
        read: Option<&[u8]>,
    ) {
        let arguments = match parsed {
            Some(parsed) => Some(parsed.clone()),
            None => read.and_then(|bytes| serde_json::from_slice(bytes).ok()),
        };
        if let Some(mut arguments) = arguments {
            redact(&mut arguments, sensitive);
            self.arguments = Some(arguments);
        }
    }

    /// [`time`](AuditRecord::time) as RFC 3339 in UTC, truncated to the millisecond, as it is
    /// serialised: `"2026-11-30T18:07:01.123Z"`. Instants outside the years 0000 to 9999 are
    /// clamped to them.
    #[must_use]
    pub fn time_rfc3339(&self) -> String {
        Rfc3339(self.time).to_string()
    }
}

fn serialize_time<S: Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&Rfc3339(*time))
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `serialize_with` passes a reference
fn serialize_latency<S: Serializer>(latency: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    round_millis(*latency).serialize(serializer)
}

/// `ms` rounded to three decimals (a microsecond); `None` for a NaN or an infinity.
pub(super) fn round_millis(ms: f64) -> Option<f64> {
    ms.is_finite().then(|| (ms * 1000.0).round() / 1000.0)
}

/// The request id of a request: its `x-request-id` when that is 1 to 128 visible ASCII
/// characters, else a generated UUID v4.
pub(crate) fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .filter(|id| (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// The trace id of a request's W3C `traceparent` header, when it has exactly one and it is
/// valid.
pub(crate) fn trace_id(headers: &HeaderMap) -> Option<String> {
    let mut values = headers.get_all("traceparent").into_iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    parse_traceparent(value.to_str().ok()?).map(str::to_owned)
}

/// The trace id of a `traceparent` value, `version-traceid-parentid-flags` in lowercase hex
/// of 2, 32, 16 and 2 digits (W3C Trace Context): version `ff`, an all-zero trace id or
/// parent id are invalid; version `00` has nothing after the flags, a later version may have
/// more fields after a `-`.
fn parse_traceparent(value: &str) -> Option<&str> {
    let value = value.trim_matches([' ', '\t']);
    let head = value.get(..55)?;
    let rest = &value[55..];
    let mut fields = head.split('-');
    let (version, trace, parent, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let hex = |field: &str, len: usize| {
        field.len() == len
            && field
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let nonzero = |field: &str| field.bytes().any(|b| b != b'0');
    let well_formed = fields.next().is_none()
        && hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && nonzero(trace)
        && hex(parent, 16)
        && nonzero(parent)
        && hex(flags, 2);
    let ends_right = if version == "00" {
        rest.is_empty()
    } else {
        rest.is_empty() || rest.starts_with('-')
    };
    (well_formed && ends_right).then_some(trace)
}

/// What a sensitive argument is replaced by.
pub(crate) const REDACTED: &str = "[redacted]";

/// Replaces the value of each top-level key of `arguments` listed in `sensitive` by
/// `"[redacted]"`.
pub(crate) fn redact(arguments: &mut Value, sensitive: &[String]) {
    let Some(object) = arguments.as_object_mut() else {
        return;
    };
    for key in sensitive {
        if let Some(value) = object.get_mut(key) {
            *value = Value::String(REDACTED.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    fn traced(value: &str) -> Option<String> {
        trace_id(&headers(&[("traceparent", value)]))
    }

    #[test]
    fn traceparent_valid() {
        let value = format!("00-{TRACE}-00f067aa0ba902b7-01");
        assert_eq!(traced(&value).as_deref(), Some(TRACE));
        let unsampled = format!("00-{TRACE}-00f067aa0ba902b7-00");
        assert_eq!(traced(&unsampled).as_deref(), Some(TRACE));
        // A later version may carry more fields after the flags.
        let later = format!("01-{TRACE}-00f067aa0ba902b7-01-what-comes-next");
        assert_eq!(traced(&later).as_deref(), Some(TRACE));
        assert_eq!(trace_id(&HeaderMap::new()), None);
    }

    #[test]
    fn traceparent_wrong_lengths_rejected() {
        for value in [
            format!("0-{TRACE}-00f067aa0ba902b7-01"),
            format!("000-{TRACE}-00f067aa0ba902b7-01"),
            format!("00-{}-00f067aa0ba902b7-01", &TRACE[1..]),
            format!("00-{TRACE}0-00f067aa0ba902b7-01"),
            format!("00-{TRACE}-00f067aa0ba902b-01"),
            format!("00-{TRACE}-00f067aa0ba902b70-01"),
            format!("00-{TRACE}-00f067aa0ba902b7-1"),
            format!("00-{TRACE}-00f067aa0ba902b7-011"),
            // Version 00 has nothing after the flags.
            format!("00-{TRACE}-00f067aa0ba902b7-01-extra"),
            // A later version's extra fields start with a dash.
            format!("01-{TRACE}-00f067aa0ba902b7-01x"),
        ] {
            assert_eq!(traced(&value), None, "{value}");
        }
    }

    #[test]
    fn traceparent_uppercase_hex_rejected() {
        let value = format!("00-{}-00f067aa0ba902b7-01", TRACE.to_uppercase());
        assert_eq!(traced(&value), None);
        assert_eq!(traced(&format!("00-{TRACE}-00F067AA0BA902B7-01")), None);
        assert_eq!(traced(&format!("0A-{TRACE}-00f067aa0ba902b7-01")), None);
    }

    #[test]
    fn traceparent_zero_ids_rejected() {
        let zeros = "0".repeat(32);
        assert_eq!(traced(&format!("00-{zeros}-00f067aa0ba902b7-01")), None);
        assert_eq!(traced(&format!("00-{TRACE}-0000000000000000-01")), None);
    }

    #[test]
    fn traceparent_version_ff_rejected() {
        assert_eq!(traced(&format!("ff-{TRACE}-00f067aa0ba902b7-01")), None);
    }

    #[test]
    fn traceparent_garbage_rejected() {
        for value in [
            "",
            "garbage",
            "00",
            "00-",
            &"-".repeat(55),
            &format!("00_{TRACE}_00f067aa0ba902b7_01"),
            &format!("00-{}-00f067aa0ba902b7-01", "g".repeat(32)),
            &format!("00-{TRACE}-00f067aa0ba902b7-zz"),
        ] {
            assert_eq!(traced(value), None, "{value:?}");
        }
        // Two traceparent headers: which one holds is unknown, so neither does.
        let two = headers(&[
            ("traceparent", &format!("00-{TRACE}-00f067aa0ba902b7-01")),
            ("traceparent", &format!("00-{TRACE}-00f067aa0ba902b8-01")),
        ]);
        assert_eq!(trace_id(&two), None);
    }

    fn is_uuid_v4(id: &str) -> bool {
        uuid::Uuid::parse_str(id).is_ok_and(|uuid| uuid.get_version_num() == 4) && id.len() == 36
    }

    #[test]
    fn request_id_taken_from_the_header() {
        let id = request_id(&headers(&[("x-request-id", "req-42/abc:DEF")]));
        assert_eq!(id, "req-42/abc:DEF");
        let longest = "r".repeat(128);
        assert_eq!(request_id(&headers(&[("x-request-id", &longest)])), longest);
    }

    #[test]
    fn request_id_generated_without_a_header() {
        let first = request_id(&HeaderMap::new());
        let second = request_id(&HeaderMap::new());
        assert!(is_uuid_v4(&first), "{first}");
        assert_ne!(first, second);
    }

    #[test]
    fn request_id_generated_for_an_insane_header() {
        let too_long = "r".repeat(129);
        let mut tab = HeaderMap::new();
        tab.insert("x-request-id", HeaderValue::from_static("a\tb"));
        let mut obs = HeaderMap::new();
        obs.insert("x-request-id", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        for map in [
            headers(&[("x-request-id", &too_long)]),
            headers(&[("x-request-id", "")]),
            headers(&[("x-request-id", "has space")]),
            tab,
            obs,
        ] {
            let id = request_id(&map);
            assert!(is_uuid_v4(&id), "{map:?} gave {id}");
        }
    }

    fn record() -> AuditRecord {
        let mut record = AuditRecord::new(
            &headers(&[("x-request-id", "r-1")]),
            "charge",
            &Method::POST,
            "/api/payments/charge",
        );
        record.time = UNIX_EPOCH + Duration::from_millis(1_796_062_021_123);
        record
    }

    #[test]
    fn outcome_serialises_to_snake_case() {
        for (outcome, name) in [
            (Outcome::Executed, "executed"),
            (Outcome::Replayed, "replayed"),
            (Outcome::RateLimited, "rate_limited"),
            (Outcome::Denied, "denied"),
            (Outcome::Invalid, "invalid"),
            (Outcome::TimedOut, "timed_out"),
            (Outcome::Unavailable, "unavailable"),
        ] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), json!(name));
            assert_eq!(outcome.as_str(), name);
            assert_eq!(outcome.to_string(), name);
        }
    }

    #[test]
    fn record_serialises_every_field() {
        let mut record = record();
        record.caller = Some("admin".into());
        record.idempotency_key = Some("k-7".into());
        record.finish(
            StatusCode::CREATED,
            Outcome::Replayed,
            Duration::from_nanos(12_345_678),
        );
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(
            text,
            r#"{"time":"2026-11-30T18:07:01.123Z","request_id":"r-1","trace_id":null,"caller":"admin","tool":"charge","method":"POST","path":"/api/payments/charge","status":201,"latency_ms":12.346,"idempotency_key":"k-7","outcome":"replayed"}"#
        );
        assert_eq!(record.time_rfc3339(), "2026-11-30T18:07:01.123Z");
    }

    #[test]
    fn arguments_absent_when_none() {
        let value = serde_json::to_value(record()).unwrap();
        assert!(!value.as_object().unwrap().contains_key("arguments"));
        let mut with = record();
        with.arguments = Some(json!({"order_id": 7}));
        let value = serde_json::to_value(with).unwrap();
        assert_eq!(value["arguments"], json!({"order_id": 7}));
    }

    #[test]
    fn latency_has_at_most_three_decimals() {
        for (latency, expected) in [
            (0.0, "0.0"),
            (1.0, "1.0"),
            (0.123_456_7, "0.123"),
            (2.000_5, "2.001"),
            (1_234.567_89, "1234.568"),
        ] {
            let mut record = record();
            record.latency_ms = latency;
            let value = serde_json::to_value(&record).unwrap();
            assert_eq!(value["latency_ms"].to_string(), expected, "{latency}");
        }
        let mut record = record();
        record.latency_ms = f64::NAN;
        assert_eq!(
            serde_json::to_value(&record).unwrap()["latency_ms"],
            Value::Null
        );
    }

    #[test]
    fn redact_replaces_listed_top_level_keys() {
        let mut arguments = json!({
            "user": "ada",
            "password": "hunter2",
            "card": {"number": "4242"},
            "nested": {"password": "kept"},
        });
        redact(
            &mut arguments,
            &["password".into(), "card".into(), "absent".into()],
        );
        assert_eq!(
            arguments,
            json!({
                "user": "ada",
                "password": "[redacted]",
                "card": "[redacted]",
                "nested": {"password": "kept"},
            })
        );
        let mut not_an_object = json!(["password"]);
        redact(&mut not_an_object, &["password".into()]);
        assert_eq!(not_an_object, json!(["password"]));
    }
}

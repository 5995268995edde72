//! Counts and times the calls of described operations, and discovery requests, through the
//! [`metrics`](https://docs.rs/metrics) facade, when the layer is built with
//! `HaloBuilder::metrics(true)`. Whatever recorder the application installs receives them;
//! with none installed, each call costs a few label clones handed to a no-op.
//!
//! Every label value is bounded: tool names come from the document, outcomes, status classes
//! and circuit states from short fixed lists. Paths, callers and keys never become labels.
//!
//! Circuit breakers (`resilience.circuit`) add one gauge per tool with a circuit, its state as
//! this instance sees it (`0` closed, `1` half-open, `2` open: one series per tool, so an
//! alert is `halo_circuit_state > 0`), and a counter of the changes of state this instance
//! made, by the state moved to. With a shared store (Redis) the instance whose call moved the
//! shared circuit counts the change, so the sum over instances counts each change once; the
//! gauge of the others follows when they learn of it. Calls refused by an open circuit are
//! counted by [`TOOL_CALLS`] with the outcome `circuit_open` (see `circuit.rs`).

use std::sync::Arc;
use std::time::Duration;

use ::metrics::{SharedString, Unit, counter, describe_counter, describe_histogram, histogram};
use http::StatusCode;

use crate::audit::Outcome;
use crate::registry::Registry;

#[cfg(feature = "prometheus")]
mod prometheus;

#[cfg(feature = "prometheus")]
pub use prometheus::{Prometheus, PrometheusError};

/// Calls of described operations that reached the layer, by `tool`, `outcome` and `status`.
pub(crate) const TOOL_CALLS: &str = "halo_tool_calls_total";
/// How long calls took in the layer, in seconds, by `tool` and `outcome`.
pub(crate) const TOOL_CALL_DURATION: &str = "halo_tool_call_duration_seconds";
/// HALO discovery requests, by `target` (`manifest` or `path`) and `status`.
pub(crate) const DISCOVERY_REQUESTS: &str = "halo_discovery_requests_total";
/// Approvals of held calls, by `tool` and `event` (`requested`, `approved`, `denied`,
/// `expired`, `cancelled`).
pub(crate) const APPROVALS: &str = "halo_approvals_total";

/// The buckets of [`TOOL_CALL_DURATION`] for exporters that need them, in seconds: from a
/// tenth of a millisecond (a refused call) to half a minute (a slow tool).
#[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
pub(crate) const DURATION_BUCKETS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// The layer's metrics: the tool names as shared label values, made once.
#[derive(Debug)]
pub(crate) struct Metrics {
    tools: Box<[Arc<str>]>,
}

impl Metrics {
    /// Label values for every tool of `registry`, and the metrics' descriptions handed to the
    /// recorder installed now, if any.
    pub(crate) fn new(registry: &Registry) -> Self {
        describe();
        Self {
            tools: registry
                .tools()
                .map(|tool| Arc::from(tool.name()))
                .collect(),
        }
    }

    /// One call of the tool at `tool`: what became of it, its answer's status, and how long
    /// the layer took to answer (for a streamed call, until the stream started).
    pub(crate) fn call(
        &self,
        tool: usize,
        outcome: Outcome,
        status: StatusCode,
        elapsed: Duration,
    ) {
        let name = SharedString::from(Arc::clone(&self.tools[tool]));
        counter!(
            TOOL_CALLS,
            "tool" => name.clone(),
            "outcome" => outcome.as_str(),
            "status" => class(status),
        )
        .increment(1);
        histogram!(TOOL_CALL_DURATION, "tool" => name, "outcome" => outcome.as_str())
            .record(elapsed);
    }

    /// One approval event of a held call of the tool at `tool`: `requested`, `approved`,
    /// `denied`, `expired` or `cancelled` (withdrawn by its caller).
    pub(crate) fn approval(&self, tool: usize, event: &'static str) {
        let name = SharedString::from(Arc::clone(&self.tools[tool]));
        counter!(APPROVALS, "tool" => name, "event" => event).increment(1);
    }

    /// One discovery request for `path`, answered with `status`.
    pub(crate) fn discovery(&self, path: &str, status: StatusCode) {
        let target = if path == "/" { "manifest" } else { "path" };
        counter!(DISCOVERY_REQUESTS, "target" => target, "status" => class(status)).increment(1);
    }
}

/// Hands the metrics' units and descriptions to the installed recorder.
pub(crate) fn describe() {
    describe_counter!(
        TOOL_CALLS,
        Unit::Count,
        "Calls of described operations that reached the HALO layer, by tool, outcome and status class."
    );
    describe_histogram!(
        TOOL_CALL_DURATION,
        Unit::Seconds,
        "Time the HALO layer took to answer a call of a described operation, by tool and outcome."
    );
    describe_counter!(
        APPROVALS,
        Unit::Count,
        "Approvals of held calls, by tool and event (requested, approved, denied, expired, cancelled)."
    );
    describe_counter!(
        DISCOVERY_REQUESTS,
        Unit::Count,
        "HALO discovery requests (OPTIONS with application/llm+json), by target and status class."
    );
    halo_govern::metrics::describe();
}

/// `2xx`, `4xx`, ...: the label of a status.
fn class(status: StatusCode) -> &'static str {
    match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

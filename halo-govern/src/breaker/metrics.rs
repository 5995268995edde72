//! The state of circuit breakers (`resilience.circuit`) in the metrics: a gauge per tool with a
//! circuit, its state as this instance sees it, and a counter of the changes this instance
//! made. Both are written only when a state changes (and the gauge once when the layer is
//! built), so a closed circuit's calls cost nothing more.

use std::sync::Arc;

use ::metrics::{SharedString, Unit, counter, describe_counter, describe_gauge, gauge};

/// The state of each tool's circuit as this instance sees it, by `tool`: 0 closed, 1
/// half-open, 2 open.
pub const CIRCUIT_STATE: &str = "halo_circuit_state";
/// Changes of state of circuits this instance made, by `tool` and `to` (`closed`,
/// `half_open`, `open`).
pub const CIRCUIT_TRANSITIONS: &str = "halo_circuit_transitions_total";

/// The state of a circuit, as the metrics show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls go through.
    Closed,
    /// One probe call at a time goes through.
    HalfOpen,
    /// Calls are refused until its wait is over.
    Open,
}

impl CircuitState {
    /// The value of [`CIRCUIT_STATE`].
    fn value(self) -> f64 {
        match self {
            Self::Closed => 0.0,
            Self::HalfOpen => 1.0,
            Self::Open => 2.0,
        }
    }

    /// The `to` label of [`CIRCUIT_TRANSITIONS`].
    fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HalfOpen => "half_open",
            Self::Open => "open",
        }
    }
}

/// The circuit of the tool named `tool` is in `state` as this instance sees it; `moved`: this
/// instance moved it there (else it learnt of it, or the layer was built).
pub fn circuit(tool: &Arc<str>, state: CircuitState, moved: bool) {
    let name = SharedString::from(Arc::clone(tool));
    gauge!(CIRCUIT_STATE, "tool" => name.clone()).set(state.value());
    if moved {
        counter!(CIRCUIT_TRANSITIONS, "tool" => name, "to" => state.as_str()).increment(1);
    }
}

/// Hands the circuit metrics' units and descriptions to the installed recorder.
pub fn describe() {
    describe_gauge!(
        CIRCUIT_STATE,
        "State of each tool's circuit breaker as this instance sees it: 0 closed, 1 half-open, 2 open."
    );
    describe_counter!(
        CIRCUIT_TRANSITIONS,
        Unit::Count,
        "Changes of state of circuit breakers made by this instance, by tool and state moved to."
    );
}

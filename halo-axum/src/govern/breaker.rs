//! The circuit step of a call: a permit from its tool's breaker, or `503`.

use halo_govern::{Permit, Refused, seconds_up};
use halo_protocol::Circuit;
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use super::Governance;
use crate::audit::Outcome;
use crate::problem;
use crate::step::{Step, Stop};

impl Governance {
    /// The circuit step: the permit a call of the tool at `tool` holds until it answers (none
    /// when the tool declares no circuit), or `503` with `Retry-After` while its circuit is
    /// open or its one probe is running.
    pub(crate) async fn enter(&self, tool: usize) -> Step<Option<Permit>> {
        let Some(breaker) = &self.rules(tool).breaker else {
            return Ok(None);
        };
        match breaker.enter().await {
            Ok(permit) => Ok(Some(permit)),
            Err(refused) => Err(circuit_open(breaker.circuit(), refused)),
        }
    }
}

/// `503` for a call refused by an open circuit, with `Retry-After` in whole seconds (at
/// least 1).
#[cold]
fn circuit_open(circuit: &Circuit, refused: Refused) -> Stop {
    let seconds = seconds_up(refused.retry_after).max(1);
    let detail = if refused.retry_after.is_zero() {
        format!(
            "this operation's circuit is half-open and its probe call is running; try again in {seconds} s"
        )
    } else {
        format!(
            "this operation failed {} times in a row and its circuit is open; try again in {seconds} s",
            circuit.failures()
        )
    };
    let mut response = problem::response(StatusCode::SERVICE_UNAVAILABLE, detail);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    Stop::new(Outcome::CircuitOpen, response)
}

//! What a call answers, as rig reads a tool's answer: a [`ToolOutput`] for a success, a
//! [`ToolExecutionError`] for a failure, whose model output is what halo-agent's loop gives
//! its model (the problem details, or one line) and whose message never holds a credential.

use halo_protocol::{Problem, ToolOutput as HaloOutput};
use rig_core::tool::{ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::Value;

use crate::{Body, Error, ToolResponse};

/// A call's answer for rig.
pub(super) fn answer(
    result: crate::Result<ToolResponse>,
) -> Result<ToolOutput, ToolExecutionError> {
    match result {
        Ok(response) if response.status().as_u16() >= 400 => {
            let status = response.status().as_u16();
            let message = format!("the tool answered {status}");
            let output = HaloOutput::from(&response);
            Err(failure(kind_of_status(status), message, &output).with_http_status(status))
        }
        Ok(response) => Ok(success(response)),
        Err(error) => Err(call_failure(error)),
    }
}

/// What the model reads of a success: the JSON as JSON, text as text, and for no body the
/// line halo-agent's model reads.
fn success(response: ToolResponse) -> ToolOutput {
    let status = response.status().as_u16();
    match response.into_body() {
        Body::Json(value) => ToolOutput::json(value),
        Body::Text(text) => ToolOutput::text(text),
        Body::Empty => ToolOutput::text(HaloOutput::from_response(status, Value::Null).text),
    }
}

/// A problem the adapter answers itself (arguments the model got wrong, a tool that does
/// not exist), as a failure of `kind`.
pub(super) fn problem(kind: ToolErrorKind, problem: Problem) -> ToolExecutionError {
    let status = problem.status;
    let message = problem
        .detail
        .clone()
        .unwrap_or_else(|| problem.title.clone());
    failure(kind, message, &HaloOutput::problem(problem)).with_http_status(status)
}

/// A failed call: its kind, status and model output from the client's error, which stays
/// the failure's source.
fn call_failure(error: Error) -> ToolExecutionError {
    let output = HaloOutput::from(&error);
    let status = error.status().map(|status| status.as_u16());
    let message = error.to_string();
    let mut failure = if error.is_denied() {
        ToolExecutionError::refused(&message).with_model_output(model_output(&output))
    } else {
        failure(kind_of_error(&error, status), message, &output)
    };
    if let Some(status) = status.or_else(|| problem_status(&output)) {
        failure = failure.with_http_status(status);
    }
    failure.with_source(error)
}

fn failure(kind: ToolErrorKind, message: String, output: &HaloOutput) -> ToolExecutionError {
    ToolExecutionError::new(kind, message).with_model_output(model_output(output))
}

/// What the model reads of a failure: the problem details as JSON, or the one line.
fn model_output(output: &HaloOutput) -> ToolOutput {
    match &output.structured {
        Some(structured) => ToolOutput::json(structured.clone()),
        None => ToolOutput::text(output.text.clone()),
    }
}

/// The status of the problem an output carries (a `400` for arguments that cannot be
/// placed, a `403` for a repeat of a denied call).
fn problem_status(output: &HaloOutput) -> Option<u16> {
    output
        .structured
        .as_ref()
        .and_then(|problem| problem.get("status"))
        .and_then(Value::as_u64)
        .and_then(|status| u16::try_from(status).ok())
}

fn kind_of_error(error: &Error, status: Option<u16>) -> ToolErrorKind {
    if let Some(status) = status {
        return kind_of_status(status);
    }
    if error.is_argument() {
        ToolErrorKind::InvalidArgs
    } else if error.is_timeout() || error.is_approval_expired() {
        ToolErrorKind::Timeout
    } else if error.is_approval_cancelled() {
        ToolErrorKind::Cancelled
    } else if error.is_connect() || error.is_unavailable() {
        ToolErrorKind::Network
    } else {
        ToolErrorKind::Other
    }
}

fn kind_of_status(status: u16) -> ToolErrorKind {
    match status {
        400 | 422 => ToolErrorKind::InvalidArgs,
        401 | 403 => ToolErrorKind::PermissionDenied,
        404 | 410 => ToolErrorKind::NotFound,
        408 | 504 => ToolErrorKind::Timeout,
        429 => ToolErrorKind::RateLimited,
        500..=599 => ToolErrorKind::Provider,
        _ => ToolErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_the_kinds_a_runtime_acts_on() {
        for (status, kind) in [
            (400, ToolErrorKind::InvalidArgs),
            (422, ToolErrorKind::InvalidArgs),
            (401, ToolErrorKind::PermissionDenied),
            (403, ToolErrorKind::PermissionDenied),
            (404, ToolErrorKind::NotFound),
            (409, ToolErrorKind::Other),
            (429, ToolErrorKind::RateLimited),
            (504, ToolErrorKind::Timeout),
            (503, ToolErrorKind::Provider),
        ] {
            assert_eq!(kind_of_status(status), kind, "{status}");
        }
    }

    #[test]
    fn a_problem_is_what_the_model_reads() {
        let failure = problem(
            ToolErrorKind::NotFound,
            Problem::new(404).with_detail("there is no tool named `x`"),
        );
        assert_eq!(failure.http_status(), Some(404));
        assert_eq!(failure.message(), "there is no tool named `x`");
        let output = failure.model_output().as_json().unwrap();
        assert_eq!(output["status"], 404);
        assert_eq!(output["detail"], "there is no tool named `x`");
    }
}

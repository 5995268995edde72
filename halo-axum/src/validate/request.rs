//! The validation step of a call: its parameters, then its body, checked against the
//! operation's [`Validator`], refused as axum's own extractors would refuse them.

use axum::body::Body;
use bytes::Bytes;
use halo_protocol::{FieldError, Problem};
use http::request::Parts;

use super::Validator;
use crate::audit::Outcome;
use crate::step::{Step, Stop};
use crate::valid_json::ParsedBody;
use crate::{body, problem};

/// Checks a call's path (`path`: each parameter's raw value by name), query and header
/// parameters: `400` naming every offending value. Like axum's `Path` and `Query`, which
/// run before a body extractor, this refuses without reading the body.
pub(crate) fn request_params(
    validator: &Validator,
    path: &[(&str, &str)],
    parts: &Parts,
) -> Step<()> {
    let mut errors: Vec<FieldError> = Vec::new();
    validator
        .check_params(path, parts.uri.query(), &parts.headers, &mut errors)
        .map_err(refuse)?;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(refuse(Box::new(invalid(Part::Params, errors))))
    }
}

/// Checks a call's body, when the operation takes one: the body to hand on and its bytes
/// (its parsed JSON goes into the extensions for `ValidJson`), or `413`, `415`, `400` for
/// JSON that does not parse and `422` naming every offending value.
pub(crate) async fn request_body(
    validator: &Validator,
    parts: &mut Parts,
    body: Body,
    limit: usize,
) -> Step<(Body, Option<Bytes>)> {
    if !validator.takes_body() {
        return Ok((body, None));
    }
    let bytes = body::read(parts, body, limit).await.map_err(refuse)?;
    let mut errors: Vec<FieldError> = Vec::new();
    if let Some(parsed) = validator
        .check_body(&parts.headers, &bytes, &mut errors)
        .map_err(refuse)?
    {
        parts.extensions.insert(ParsedBody(parsed));
    }
    if errors.is_empty() {
        Ok((Body::from(bytes.clone()), Some(bytes)))
    } else {
        Err(refuse(Box::new(invalid(Part::Body, errors))))
    }
}

fn refuse(problem: Box<Problem>) -> Stop {
    Stop::new(Outcome::Invalid, problem::from_problem(&problem))
}

/// The problem for a list of validation errors: `400` for parameters (path, query and
/// headers), `422` for the body's data, as axum's own extractors answer them.
fn invalid(part: Part, errors: Vec<FieldError>) -> Problem {
    let (status, detail) = match part {
        Part::Params => (
            400,
            "the parameters do not match the operation's input schema",
        ),
        Part::Body => (422, "the body does not match the operation's input schema"),
    };
    let mut problem = Problem::new(status).with_detail(detail);
    problem.errors = errors;
    problem
}

/// Which part of a request a list of validation errors is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Path, query and header parameters.
    Params,
    /// The request body.
    Body,
}

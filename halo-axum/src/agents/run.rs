//! One run of a hosted agent: the request, the caller's tools, then the answer as JSON or
//! the events on the call's stream.

use std::sync::Arc;

use axum::Json;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use halo_protocol::{
    AgentEnd, AgentEvent, AgentFailure, AgentInput, AgentRequest, FailureCode, FieldError, Problem,
};
use http::StatusCode;
use http::header::ACCEPT_LANGUAGE;
use http::request::Parts;
use serde_json::json;

use super::tools::LocalTools;
use super::{HostedAgent, conversation};
use crate::local::Local;
use crate::{OnDisconnect, Progress, ValidJson, problem};

/// What one agent's route needs.
#[derive(Clone)]
pub(super) struct Run {
    pub(super) agent: Arc<HostedAgent>,
    pub(super) local: Local,
    pub(super) on_disconnect: OnDisconnect,
}

impl Run {
    /// Runs the agent for one request. Streamed (the layer gave the request a call), the
    /// events go on the call and the response is only the call's end; otherwise the answer
    /// is the response.
    pub(super) async fn handle(
        self,
        progress: Progress,
        parts: Parts,
        ValidJson(request): ValidJson<AgentRequest>,
    ) -> Response {
        let call = progress.call().cloned();
        if let Some(call) = &call {
            // The layer starts a run as cancelled on disconnect; this agent may say otherwise.
            call.set_on_disconnect(self.on_disconnect);
        }
        let input = match request.input {
            AgentInput::Text(text) if text.trim().is_empty() => {
                return refuse(call.as_deref(), invalid("/input", "the input is empty"));
            }
            AgentInput::Messages(messages) if messages.is_empty() => {
                return refuse(
                    call.as_deref(),
                    invalid("/input", "the input has no message"),
                );
            }
            input => input.into_messages(),
        };
        let messages = match conversation(input, &request.context) {
            Ok(messages) => messages,
            Err((index, reason)) => {
                return refuse(call.as_deref(), invalid(&format!("/input/{index}"), reason));
            }
        };
        let tools = match LocalTools::for_caller(&self.local, &self.agent, parts).await {
            Ok(tools) => tools,
            Err(problem) => {
                if let Some(call) = &call {
                    let failure = AgentFailure::new(
                        FailureCode::Tools,
                        problem.detail.clone().unwrap_or_default(),
                    );
                    call.push(&AgentEvent::AgentError(failure));
                }
                return problem::from_problem(&problem);
            }
        };
        let language = tools
            .caller()
            .headers
            .get(ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let agent = self.agent.agent_for(language.as_deref());
        let name = self.agent.name.as_str();
        let Some(call) = call else {
            let outcome = if progress.is_streaming() {
                relayed(name, &agent, tools, messages, &progress).await
            } else {
                agent
                    .run(&tools, messages)
                    .await
                    .map(|answer| AgentEnd::new(answer.content(), answer.turns(), answer.usage()))
                    .map_err(|error| AgentFailure::new(error.code(), shown(name, &error)))
            };
            return match outcome {
                Ok(end) => Json(json!({
                    "content": end.content,
                    "turns": end.turns,
                    "usage": end.usage,
                }))
                .into_response(),
                Err(failure) => problem::response(status_of(failure.code), failure.detail),
            };
        };
        let mut events = agent.run_stream(tools, messages);
        while let Some(event) = events.next().await {
            let event = match event {
                // The call began with the layer's own `agent_start`, which names the run as
                // clients resume it.
                AgentEvent::AgentStart(_) => continue,
                AgentEvent::AgentError(failure) => {
                    AgentEvent::AgentError(told(name, failure, events.error()))
                }
                event => event,
            };
            call.push(&event);
        }
        StatusCode::NO_CONTENT.into_response()
    }
}

/// `failure` as the caller is told it: its detail from `error`, the error it describes
/// (which [`shown`] logs), when there is one.
fn told(agent: &str, mut failure: AgentFailure, error: Option<&halo_agent::Error>) -> AgentFailure {
    if let Some(error) = error {
        failure.detail = shown(agent, error);
    }
    failure
}

/// What the caller of `agent` is told of `error`, which is logged in full: what went wrong,
/// but not where the model is. A model that cannot be reached, or not in time, is named by
/// its address (`could not connect to the model at http://10.0.0.7:8000/v1/...`), which is
/// the server's to know: the caller is told only that it could not be reached, and the log
/// keeps the address.
fn shown(agent: &str, error: &halo_agent::Error) -> String {
    tracing::warn!(target: "halo_axum::agents", agent, "the run failed: {error}");
    if error.endpoint().is_some() {
        error.summary().to_owned()
    } else {
        error.to_string()
    }
}

/// Runs the agent for a caller in the same process that follows its progress (an MCP
/// request with a progress token): each tool call and each turn of the model is a step.
async fn relayed(
    name: &str,
    agent: &halo_agent::Agent,
    tools: LocalTools,
    messages: Vec<halo_protocol::Message>,
    progress: &Progress,
) -> Result<AgentEnd, AgentFailure> {
    let mut events = agent.run_stream(tools, messages);
    let mut step = 0;
    while let Some(event) = events.next().await {
        let message = match event {
            AgentEvent::AgentEnd(end) => return Ok(end),
            AgentEvent::AgentError(failure) => return Err(told(name, failure, events.error())),
            AgentEvent::ToolStart(start) => format!("calling {}", start.tool),
            AgentEvent::ToolEnd(end) if end.is_error => format!("{} failed", end.tool),
            AgentEvent::ToolEnd(end) => format!("{} answered", end.tool),
            AgentEvent::LlmEnd(end) => format!("the model finished turn {}", end.turn),
            _ => continue,
        };
        step += 1;
        progress.step(step, None, message);
    }
    Err(AgentFailure::new(
        FailureCode::Other,
        "the run ended without an answer",
    ))
}

/// A `422` naming what is wrong with the input.
fn invalid(pointer: &str, message: &str) -> Problem {
    Problem::new(422)
        .with_detail("the input cannot be given to the agent")
        .with_error(FieldError::new(pointer, message))
}

/// Refuses a run: the problem as the response, and as `agent_error` on a streamed call.
fn refuse(call: Option<&crate::stream::Call>, problem: Problem) -> Response {
    if let Some(call) = call {
        let detail = problem.errors.first().map_or_else(
            || problem.title.clone(),
            |e| format!("{}: {}", e.pointer, e.message),
        );
        call.push(&AgentEvent::AgentError(AgentFailure::new(
            FailureCode::Input,
            detail,
        )));
    }
    problem::from_problem(&problem)
}

/// The status of an unstreamed run that failed this way.
fn status_of(code: FailureCode) -> StatusCode {
    match code {
        FailureCode::Input => StatusCode::UNPROCESSABLE_ENTITY,
        FailureCode::Deadline => StatusCode::GATEWAY_TIMEOUT,
        FailureCode::Llm => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

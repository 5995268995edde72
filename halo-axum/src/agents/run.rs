//! One run of a hosted agent: the request, the caller's tools, then the answer as JSON or
//! the events on the call's stream.

use std::sync::Arc;

use axum::Json;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use halo_protocol::{
    AgentEvent, AgentFailure, AgentInput, AgentRequest, FailureCode, FieldError, Problem,
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
        let Some(call) = call else {
            return match agent.run(&tools, messages).await {
                Ok(answer) => Json(json!({
                    "content": answer.content(),
                    "turns": answer.turns(),
                    "usage": answer.usage(),
                }))
                .into_response(),
                Err(error) => problem::response(status_of(&error), error.to_string()),
            };
        };
        let mut events = agent.run_stream(tools, messages);
        while let Some(event) = events.next().await {
            // The call began with the layer's own `agent_start`, which names the run as
            // clients resume it.
            if !matches!(event, AgentEvent::AgentStart(_)) {
                call.push(&event);
            }
        }
        StatusCode::NO_CONTENT.into_response()
    }
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

/// The status of an unstreamed run that failed.
fn status_of(error: &halo_agent::Error) -> StatusCode {
    if error.is_input() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else if error.is_deadline() {
        StatusCode::GATEWAY_TIMEOUT
    } else if error.is_llm() {
        StatusCode::BAD_GATEWAY
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    }
}

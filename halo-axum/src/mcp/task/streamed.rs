//! The tasks of streamed calls: a call of a streaming tool, by a client that declared the
//! Tasks extension, still running after a grace ([`TaskLimits::grace`]) becomes a task of
//! this instance. rmcp's [`TaskManager`] keeps each one (its status, its result, its time to
//! live); this store adds whose it is and the name of its call, and bounds how many are
//! kept, per caller and in all.
//!
//! The call runs in a Tokio task of its own from the start, named (`Halo-Call-Id`) so that
//! `tasks/cancel` cancels it through the layer exactly as `DELETE
//! /.well-known/halo/calls/{id}` over HTTP does, with the canceller's credentials: the layer
//! decides who may. The handler's progress steps become the task's status message. A call
//! that the layer holds for approval after the grace (its caller's identification was slow)
//! makes the task follow the approval, which `tasks/cancel` then withdraws.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use axum::body::Body;
use futures_util::future::{self, Either};
use halo_protocol::{
    CALLS_PATH, HeldStage, STREAMED_FIRST_MESSAGE, STREAMED_POLL_MS, TaskSteps, ToolOutput,
    cancellable, not_run,
};
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, CreateTaskResult, DetailedTask, ErrorCode};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use super::{TaskLimits, not_found};
use crate::Principal;
use crate::layer::Shared;
use crate::layer::held::decision::{read_as, wait_end};
use crate::layer::held::withdraw_as;
use crate::local::Local;
use crate::mcp::approval::{held, stage};

/// The answer of a call sent through the app: its status, headers and body, or why there
/// is none.
pub(in crate::mcp) type Answer = Result<(StatusCode, HeaderMap, Value), String>;

/// The tasks of this instance's streamed calls.
pub(in crate::mcp) struct Streamed {
    manager: TaskManager,
    owners: Mutex<HashMap<String, Owner>>,
    limits: TaskLimits,
    /// The app wrapped by its layer, to cancel calls through.
    local: Local,
}

/// Whose a task is, and what its call is.
struct Owner {
    /// Its caller's principal id (`None`: anonymous).
    caller: Option<String>,
    /// The `Halo-Call-Id` its call was named.
    call_id: String,
    created: Instant,
    /// When its call ended.
    ended: Option<Instant>,
    /// The approval its call waits on, when the layer held it after the grace.
    approval: Option<Arc<str>>,
}

/// A call running in a Tokio task of its own, stopped when dropped unless a task took it.
pub(in crate::mcp) struct Running(Option<JoinHandle<Answer>>);

impl Running {
    /// Sends `call` through the app in a Tokio task of its own.
    pub(in crate::mcp) fn spawn(local: &Local, call: Request<Body>) -> Self {
        let local = local.clone();
        Self(Some(tokio::spawn(
            async move { local.exchange(call).await },
        )))
    }

    /// The call's answer. Awaited once to its end.
    pub(in crate::mcp) async fn answer(&mut self) -> Answer {
        let Some(handle) = self.0.as_mut() else {
            return Err("the call was handed over".to_owned());
        };
        let joined = handle.await;
        self.0 = None;
        joined.unwrap_or_else(|error| Err(format!("the call stopped: {error}")))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.abort();
        }
    }
}

/// A fresh name for a call that may become a task: random, so nobody else can name it.
pub(in crate::mcp) fn call_id() -> HeaderValue {
    let id = format!("mcp-{}", uuid::Uuid::new_v4().simple());
    HeaderValue::from_str(&id).unwrap_or(HeaderValue::from_static("mcp-call"))
}

impl Streamed {
    pub(in crate::mcp) fn new(local: Local, limits: TaskLimits) -> Self {
        Self {
            manager: TaskManager::new(),
            owners: Mutex::new(HashMap::new()),
            limits,
            local,
        }
    }

    /// The bounds of the tasks.
    pub(in crate::mcp) fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    fn owners(&self) -> MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the running call named `call_id` of `caller` a task, its progress `steps` its
    /// status message: the task, or the call and its steps back when the caller or the
    /// instance keeps as many tasks as it may.
    pub(in crate::mcp) fn adopt(
        self: &Arc<Self>,
        layer: &Arc<Shared>,
        caller: Option<Principal>,
        call_id: &HeaderValue,
        running: Running,
        steps: UnboundedReceiver<Value>,
    ) -> Result<CreateTaskResult, (Running, UnboundedReceiver<Value>)> {
        let caller_id = caller.as_ref().map(|c| c.id().to_owned());
        let limits = self.limits;
        // Held while the task is made, so that its call ending at once finds its owner, and
        // no other call takes the room it was counted in.
        let mut owners = self.owners();
        owners.retain(|_, owner| limits.keeps(owner.created, owner.ended));
        let callers = owners.values().filter(|o| o.caller == caller_id).count();
        if !limits.has_room(callers, owners.len()) {
            return Err((running, steps));
        }
        let store = Arc::clone(self);
        let layer = Arc::clone(layer);
        let options = TaskOptions::new()
            .with_ttl_ms(limits.ttl_ms())
            .with_poll_interval_ms(STREAMED_POLL_MS)
            .with_status_message(STREAMED_FIRST_MESSAGE);
        let task = self.manager.spawn(options, move |context| {
            Box::pin(async move {
                let mut running = running;
                let answer = progress(running.answer(), steps, &context).await;
                let result = store.finish(&layer, caller, &context, answer).await;
                if let Some(owner) = store.owners().get_mut(context.task_id()) {
                    owner.ended = Some(Instant::now());
                }
                result
            })
        });
        owners.insert(
            task.task_id.clone(),
            Owner {
                caller: caller_id,
                call_id: call_id.to_str().unwrap_or_default().to_owned(),
                created: Instant::now(),
                ended: None,
                approval: None,
            },
        );
        Ok(CreateTaskResult::new(task))
    }

    /// The task's result from its call's answer: the tool result, `cancelled` when
    /// `tasks/cancel` cancelled it, or the approval's end when the layer held it.
    async fn finish(
        &self,
        layer: &Arc<Shared>,
        caller: Option<Principal>,
        context: &TaskContext,
        answer: Answer,
    ) -> Result<CallToolResult, TaskExit> {
        let (status, headers, body) = match answer {
            Ok(answer) => answer,
            Err(message) => return Ok(ToolOutput::failure(message).into()),
        };
        if let Some(held) = held(status, &headers, &body) {
            let id: Arc<str> = held.id().into();
            if let Some(owner) = self.owners().get_mut(context.task_id()) {
                owner.approval = Some(Arc::clone(&id));
            }
            context.set_status_message(held.task_message());
            let Ok(entry) = read_as(layer, caller.as_ref(), &id).await else {
                let failure = format!("approval {id} could not be read");
                return Ok(ToolOutput::failure(failure).into());
            };
            return match stage(&*wait_end(layer, entry).await) {
                HeldStage::Ran(output) => Ok(output.into()),
                HeldStage::NotRun(problem) => Err(TaskExit::Error(not_run(&problem))),
                HeldStage::Withdrawn => Err(TaskExit::Cancelled),
                _ => Err(TaskExit::Error(ErrorData::internal_error(
                    format!("approval {id} can no longer be read"),
                    None,
                ))),
            };
        }
        if status == StatusCode::CONFLICT && context.is_cancel_requested() {
            return Err(TaskExit::Cancelled);
        }
        let media = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        Ok(ToolOutput::from_answer(status.as_u16(), media, body).into())
    }

    /// The caller's own task `task_id`: its call's name and approval.
    fn own(
        &self,
        caller: Option<&Principal>,
        task_id: &str,
    ) -> Result<(String, Option<Arc<str>>), ErrorData> {
        let owners = self.owners();
        match owners.get(task_id) {
            Some(owner) if owner.caller.as_deref() == caller.map(Principal::id) => {
                Ok((owner.call_id.clone(), owner.approval.clone()))
            }
            _ => Err(not_found(task_id)),
        }
    }

    /// `tasks/get` of a streamed call's task, for the caller of `parts`.
    pub(in crate::mcp) async fn get(
        &self,
        layer: &Shared,
        parts: Option<&Parts>,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let caller = identify(layer, parts).await;
        self.own(caller.as_ref(), task_id)?;
        self.manager
            .get_task(task_id)
            .map_err(|_| not_found(task_id))
    }

    /// `tasks/cancel` of a streamed call's task, for the caller of `parts`: its call is
    /// cancelled through the layer as the caller (`DELETE` of the call), or its approval
    /// withdrawn. A call that ended meanwhile ends its task as it ended.
    pub(in crate::mcp) async fn cancel(
        &self,
        layer: &Arc<Shared>,
        parts: Option<&Parts>,
        task_id: &str,
    ) -> Result<(), ErrorData> {
        let caller = identify(layer, parts).await;
        let (call_id, approval) = self.own(caller.as_ref(), task_id)?;
        cancellable(task_id, self.manager.get_task(task_id))?;
        // The intent first: the call's cancelled answer then ends the task `cancelled`.
        self.manager
            .cancel_task(task_id)
            .map_err(|_| not_found(task_id))?;
        if let Some(id) = approval {
            return match withdraw_as(layer, caller.as_ref(), &id).await {
                Ok(_) => Ok(()),
                Err(refusal) => Err(super::held::refused(task_id, refusal)),
            };
        }
        // `CALLS_PATH` ends with its slash.
        let target = format!("{CALLS_PATH}{call_id}");
        let request = self
            .local
            .request(parts, Method::DELETE, &target)
            .map_err(|message| ErrorData::internal_error(message, None))?;
        match self.local.exchange(request).await {
            // Cancelled, or it ended before the cancel reached it.
            Ok((status, _, _))
                if status.is_success()
                    || status == StatusCode::NOT_FOUND
                    || status == StatusCode::CONFLICT =>
            {
                Ok(())
            }
            Ok((status, _, body)) => Err(ErrorData::internal_error(
                format!("the call of task {task_id} could not be cancelled ({status})"),
                Some(body),
            )),
            Err(message) => Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None)),
        }
    }
}

/// The caller of `parts`, as the layer identifies it.
async fn identify(layer: &Shared, parts: Option<&Parts>) -> Option<Principal> {
    layer.gate.identify(parts?).await.ok().flatten()
}

/// Awaits `answer`, making each progress step of `steps` the task's status message.
async fn progress(
    answer: impl Future<Output = Answer>,
    mut steps: UnboundedReceiver<Value>,
    context: &TaskContext,
) -> Answer {
    let mut words = TaskSteps::default();
    let mut answer = pin!(answer);
    loop {
        match future::select(answer, pin!(steps.recv())).await {
            Either::Left((answer, _)) => return answer,
            Either::Right((Some(data), pending)) => {
                answer = pending;
                context.set_status_message(words.message(&data));
            }
            Either::Right((None, pending)) => return pending.await,
        }
    }
}

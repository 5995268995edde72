//! Calls being streamed: each one's events, kept for replay until the call has been over
//! for the retention time.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use halo_protocol::{
    AgentEvent, AgentFailure, AgentStart, FailureCode, Problem, ToolEvent, ToolStart,
};
use http::StatusCode;
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::cancel::Running;
use super::{OnDisconnect, StreamConfig};
use crate::audit::Outcome;
use crate::govern::{Mirror, MirroredFrame, ReplayStore};

/// One SSE event, framed: `event: …\nid: …\ndata: …\n\n`.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) id: u64,
    pub(crate) bytes: Bytes,
}

/// An event of a streamed call: a tool's ([`ToolEvent`]) or a hosted agent's
/// ([`AgentEvent`]), on the same envelope.
pub(crate) trait Envelope: Serialize {
    /// The SSE event name.
    fn name(&self) -> &'static str;
    /// Whether the call ends with it.
    fn is_terminal(&self) -> bool;
    /// The status a terminal event ends its call with.
    fn status(&self) -> u16;
}

impl Envelope for ToolEvent {
    fn name(&self) -> &'static str {
        Self::name(self)
    }

    fn is_terminal(&self) -> bool {
        Self::is_terminal(self)
    }

    fn status(&self) -> u16 {
        match self {
            Self::ToolEnd(end) => end.status,
            Self::ToolError(problem) => problem.status,
            _ => 200,
        }
    }
}

impl Envelope for AgentEvent {
    fn name(&self) -> &'static str {
        Self::name(self)
    }

    fn is_terminal(&self) -> bool {
        Self::is_terminal(self)
    }

    fn status(&self) -> u16 {
        match self {
            Self::AgentError(failure) => match failure.code {
                FailureCode::Cancelled => 503,
                FailureCode::Deadline => 504,
                _ => 500,
            },
            _ => 200,
        }
    }
}

/// How a call ended, for the audit trail: the status it ended with, and what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct End {
    pub(crate) status: StatusCode,
    pub(crate) outcome: Outcome,
}

impl End {
    fn new(status: u16, outcome: Outcome) -> Self {
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            outcome,
        }
    }
}

/// What is done with a call's [`End`] once it ends (its audit record written).
struct Report(Box<dyn FnOnce(End) + Send>);

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Report")
    }
}

/// One streamed call.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) id: String,
    /// The tool called (its index in the registry).
    pub(crate) tool: usize,
    /// Who called it (`None`: anonymous).
    pub(crate) caller: Option<String>,
    state: Mutex<State>,
    changed: Notify,
    max_events: usize,
    /// Where its events are copied for the other instances, with a shared store.
    mirror: Option<Mirror>,
}

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Frame>,
    last_id: u64,
    /// When the terminal event was pushed.
    finished: Option<Instant>,
    subscribers: usize,
    task: Option<AbortHandle>,
    on_disconnect: OnDisconnect,
    /// A hosted agent's run (its events are [`AgentEvent`]s).
    agent: bool,
    /// Ended by a cancel request (`DELETE /.well-known/halo/calls/{id}`).
    cancelled: bool,
    /// How it ended, once it has.
    end: Option<End>,
    /// Told how it ended, once: taken when it ends.
    report: Option<Report>,
}

/// What a cancel request did to a streamed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// The call was running: its handler is dropped and it ends with the cancelled problem.
    Now,
    /// An earlier cancel request ended it already.
    Before,
    /// It ended on its own (its events are kept for resuming).
    Ended,
}

impl Call {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event (nothing after a terminal one) and wakes the subscribers. Past the
    /// event limit the oldest event is dropped.
    pub(crate) fn push(&self, event: &impl Envelope) {
        let data = serialize(event);
        if self.push_locked(&mut self.state(), event, &data) {
            self.changed.notify_waiters();
        }
    }

    /// [`push`](Self::push) of `event` serialised as `data`, with the state locked, without
    /// waking anyone; whether the event was appended. A terminal event's [`End`] is reported
    /// first, so that nobody sees the call over before its end is told.
    fn push_locked(&self, state: &mut State, event: &impl Envelope, data: &str) -> bool {
        if state.finished.is_some() {
            return false;
        }
        if event.is_terminal() {
            let end = *state
                .end
                .get_or_insert_with(|| End::new(event.status(), Outcome::Executed));
            if let Some(Report(report)) = state.report.take() {
                report(end);
            }
        }
        state.last_id += 1;
        let id = state.last_id;
        let mut text = String::with_capacity(data.len() + 40);
        let _ = write!(text, "event: {}\nid: {id}\ndata: {data}\n\n", event.name());
        let bytes = Bytes::from(text);
        if let Some(mirror) = &self.mirror {
            mirror.send(MirroredFrame {
                id,
                bytes: bytes.clone(),
                terminal: event.is_terminal(),
            });
        }
        state.frames.push_back(Frame { id, bytes });
        if state.frames.len() > self.max_events {
            state.frames.pop_front();
        }
        if event.is_terminal() {
            state.finished = Some(Instant::now());
            state.task = None;
        }
        true
    }

    /// Ends the call with `problem`, with the state locked, without waking anyone: a
    /// `tool_error`, or an `agent_error` for an agent's run (its code `cancelled` for a
    /// cancelled call or a `503`, `deadline` for a `504`). Whether it ended it now.
    fn end_locked(&self, state: &mut State, problem: Problem, outcome: Outcome) -> bool {
        if state.finished.is_some() {
            return false;
        }
        state.end = Some(End::new(problem.status, outcome));
        if !state.agent {
            let event = ToolEvent::ToolError(problem);
            return self.push_locked(state, &event, &serialize(&event));
        }
        let code = match (outcome, problem.status) {
            (Outcome::Cancelled, _) | (_, 503) => FailureCode::Cancelled,
            (_, 504) => FailureCode::Deadline,
            _ => FailureCode::Other,
        };
        let detail = problem.detail.unwrap_or(problem.title);
        let event = AgentEvent::AgentError(AgentFailure::new(code, detail));
        self.push_locked(state, &event, &serialize(&event))
    }

    /// Has `report` told how the call ends, once, as it ends (at once when it has ended).
    /// It runs with the call locked: it must be quick and must not touch the call.
    pub(crate) fn on_end(&self, report: impl FnOnce(End) + Send + 'static) {
        let mut state = self.state();
        match state.end {
            Some(end) => report(end),
            None => state.report = Some(Report(Box::new(report))),
        }
    }

    /// Sends the first event: `tool_start`, or `agent_start` for a hosted agent's run, which
    /// is cancelled when its last client leaves unless its handler says otherwise.
    pub(crate) fn begin(&self, tool: &str, agent: bool) {
        if agent {
            {
                let mut state = self.state();
                state.agent = true;
                state.on_disconnect = OnDisconnect::Cancel;
            }
            self.push(&AgentEvent::AgentStart(AgentStart::new(
                self.id.clone(),
                Some(tool.to_owned()),
            )));
        } else {
            self.push(&ToolEvent::ToolStart(ToolStart::new(self.id.clone(), tool)));
        }
    }

    /// Ends the call with `problem`: `tool_error`, or `agent_error` for an agent's run.
    pub(crate) fn fail(&self, problem: Problem) {
        self.end(problem, Outcome::Executed);
    }

    /// [`fail`](Self::fail), the audit trail told `outcome`.
    pub(crate) fn end(&self, problem: Problem, outcome: Outcome) {
        if self.end_locked(&mut self.state(), problem, outcome) {
            self.changed.notify_waiters();
        }
    }

    /// What happens when its last client leaves, from now on.
    #[cfg(feature = "agents")]
    pub(crate) fn set_on_disconnect(&self, policy: OnDisconnect) {
        self.state().on_disconnect = policy;
    }

    /// Remembers the task running the handler, to cancel it when the policy says so (or
    /// cancels it now, when a cancel request came first).
    pub(crate) fn set_task(&self, task: AbortHandle) {
        let mut state = self.state();
        if state.finished.is_none() {
            state.task = Some(task);
        } else if state.cancelled {
            task.abort();
        }
    }

    /// Cancels the call for a cancel request: when it is running, its handler is dropped and
    /// it ends with `problem` as `tool_error` (a hosted agent's run with an `agent_error`
    /// whose code is `cancelled`). The terminal event is pushed under the same lock that
    /// sees the call running, so a handler finishing at that moment cannot end it too.
    pub(crate) fn cancel(&self, problem: Problem) -> Cancel {
        let task = {
            let mut state = self.state();
            if state.cancelled {
                return Cancel::Before;
            }
            if state.finished.is_some() {
                return Cancel::Ended;
            }
            state.cancelled = true;
            let task = state.task.take();
            self.end_locked(&mut state, problem, Outcome::Cancelled);
            task
        };
        self.changed.notify_waiters();
        if let Some(task) = task {
            task.abort();
        }
        Cancel::Now
    }

    /// The frames after `after`, joined, and whether the call is over.
    pub(crate) fn frames_after(&self, after: u64) -> (Option<(u64, Bytes)>, bool) {
        let state = self.state();
        let finished = state.finished.is_some();
        let start = state.frames.partition_point(|frame| frame.id <= after);
        let pending = state.frames.range(start..);
        let (count, last) = (
            state.frames.len() - start,
            state.frames.back().map(|f| f.id),
        );
        let chunk = match count {
            0 => None,
            1 => pending.map(|f| f.bytes.clone()).next(),
            _ => {
                let mut joined = Vec::with_capacity(pending.clone().map(|f| f.bytes.len()).sum());
                for frame in pending {
                    joined.extend_from_slice(&frame.bytes);
                }
                Some(Bytes::from(joined))
            }
        };
        (chunk.zip(last).map(|(bytes, last)| (last, bytes)), finished)
    }

    /// Whether events after `after` can still be replayed: `after` is not older than the
    /// oldest kept event (and not in the future).
    pub(crate) fn can_resume_after(&self, after: u64) -> bool {
        let state = self.state();
        let oldest = state.frames.front().map_or(state.last_id + 1, |f| f.id);
        after + 1 >= oldest && after <= state.last_id
    }

    /// A future that completes on the next change; create it before looking, so no change
    /// is missed.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    pub(crate) fn subscribe(self: &Arc<Self>) -> Subscription {
        self.state().subscribers += 1;
        Subscription(Arc::clone(self))
    }

    fn expired(&self, now: Instant, retention: Duration) -> bool {
        self.state()
            .finished
            .is_some_and(|at| now.duration_since(at) >= retention)
    }

    fn finished_at(&self) -> Option<Instant> {
        self.state().finished
    }
}

/// An event's JSON (a `500` `tool_error` in the unlikely case it does not serialise).
fn serialize(event: &impl Envelope) -> String {
    serde_json::to_string(event).unwrap_or_else(|_| {
        r#"{"type":"tool_error","data":{"type":"about:blank","status":500}}"#.to_owned()
    })
}

/// A connected client. When the last one leaves a running call whose policy is
/// [`OnDisconnect::Cancel`], the handler is dropped and the call ends with `tool_error`.
#[derive(Debug)]
pub(crate) struct Subscription(Arc<Call>);

impl std::ops::Deref for Subscription {
    type Target = Call;

    fn deref(&self) -> &Call {
        &self.0
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let task = {
            let mut state = self.0.state();
            state.subscribers -= 1;
            if state.subscribers > 0 || state.on_disconnect != OnDisconnect::Cancel {
                return;
            }
            let Some(task) = state.task.take() else {
                return;
            };
            let problem =
                Problem::new(503).with_detail("the call was cancelled: its client disconnected");
            self.0.end_locked(&mut state, problem, Outcome::Cancelled);
            task
        };
        self.0.changed.notify_waiters();
        task.abort();
    }
}

/// Every call being streamed or kept for replay.
#[derive(Debug)]
pub(crate) struct Calls {
    calls: Mutex<HashMap<String, Arc<Call>>>,
    config: StreamConfig,
    /// A store the events are copied to, so that other instances can replay them.
    shared: Option<Arc<dyn ReplayStore>>,
    /// Calls started, to sweep expired ones every [`SWEEP_EVERY`] starts.
    started: AtomicUsize,
    /// The calls their callers named (`Halo-Call-Id`) that run without a stream.
    running: Arc<Running>,
}

/// Starts between two sweeps of calls past their retention.
const SWEEP_EVERY: usize = 64;

impl Calls {
    pub(crate) fn new(config: StreamConfig, shared: Option<Arc<dyn ReplayStore>>) -> Self {
        Self {
            calls: Mutex::new(HashMap::new()),
            running: Arc::new(Running::new(config.max_calls)),
            config,
            shared,
            started: AtomicUsize::new(0),
        }
    }

    /// The calls their callers named that run without a stream.
    pub(crate) fn running(&self) -> &Arc<Running> {
        &self.running
    }

    pub(crate) fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// The store that keeps other instances' calls, if any.
    pub(crate) fn shared(&self) -> Option<&Arc<dyn ReplayStore>> {
        self.shared.as_ref()
    }

    /// A new call of `tool` (named `name`) by `caller`. Calls past their retention are forgotten every
    /// [`SWEEP_EVERY`] starts and whenever the store is full; when it is still full, the call
    /// that finished first goes, and with every call still running the new one is refused
    /// (`503`).
    pub(crate) fn start(
        &self,
        tool: usize,
        name: &str,
        caller: Option<String>,
    ) -> Result<Arc<Call>, Box<Problem>> {
        let now = Instant::now();
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let sweep = self
            .started
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY);
        if sweep || calls.len() >= self.config.max_calls {
            calls.retain(|_, call| !call.expired(now, self.config.retention));
        }
        if calls.len() >= self.config.max_calls {
            let oldest = calls
                .iter()
                .filter_map(|(id, call)| Some((call.finished_at()?, id.clone())))
                .min();
            match oldest {
                Some((_, id)) => {
                    calls.remove(&id);
                }
                None => {
                    return Err(Box::new(
                        Problem::new(503)
                            .with_detail("too many calls are streaming; try again shortly"),
                    ));
                }
            }
        }
        let id = format!("c-{}", uuid::Uuid::new_v4().simple());
        let mirror = self
            .shared
            .as_ref()
            .map(|shared| shared.mirror(&id, name, caller.as_deref()));
        let call = Arc::new(Call {
            id,
            tool,
            caller,
            state: Mutex::new(State {
                on_disconnect: self.config.on_disconnect,
                ..State::default()
            }),
            changed: Notify::new(),
            max_events: self.config.max_events,
            mirror,
        });
        calls.insert(call.id.clone(), Arc::clone(&call));
        Ok(call)
    }

    /// A call still kept.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<Call>> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let call = calls.get(id)?;
        (!call.expired(Instant::now(), self.config.retention)).then(|| Arc::clone(call))
    }
}

//! A call to an MCP server, with its progress: the notifications the server sends for the
//! call's progress token are relayed to the gateway call's [`Progress`] (its `tool_progress`
//! events, or its own MCP client's progress), and a call whose future is dropped is cancelled
//! upstream (`notifications/cancelled`). A server's `notifications/tools/list_changed` is
//! passed on to whoever rebuilds the gateway ([`Gateway::tools_changed`](crate::Gateway::tools_changed)).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use halo_axum::Progress;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientConfig, ClientRequest, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, ServiceError};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How many calls' early notifications (come before their call was registered) are kept.
const EARLY_CALLS: usize = 64;

/// How many early notifications of one call are kept.
const EARLY_NOTES: usize = 16;

/// The gateway as an MCP client: it says who it is, routes progress notifications, and
/// passes on a server's word that its tools changed.
pub(super) struct Handler {
    info: ClientConfig,
    relays: Arc<Relays>,
    changed: Arc<Notify>,
}

impl Handler {
    pub(super) fn new(info: ClientConfig, relays: Arc<Relays>, changed: Arc<Notify>) -> Self {
        Self {
            info,
            relays,
            changed,
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.relays.deliver(&params);
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// Where each call's progress goes, by progress token.
#[derive(Default)]
pub(super) struct Relays {
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    relays: HashMap<ProgressToken, Progress>,
    /// Notifications for tokens no call has registered yet, the oldest token first.
    early: VecDeque<(ProgressToken, Vec<Value>)>,
}

impl Relays {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a notification's data to the call of its token; keeps it a little while when
    /// the call has not registered yet (the server may answer before it could).
    fn deliver(&self, params: &ProgressNotificationParam) {
        let data = data(params);
        let mut slots = self.slots();
        if let Some(relay) = slots.relays.get(&params.progress_token) {
            relay.send(data);
            return;
        }
        let token = &params.progress_token;
        if let Some((_, notes)) = slots.early.iter_mut().find(|(t, _)| t == token) {
            if notes.len() < EARLY_NOTES {
                notes.push(data);
            }
            return;
        }
        if slots.early.len() == EARLY_CALLS {
            slots.early.pop_front();
        }
        slots.early.push_back((token.clone(), vec![data]));
    }

    /// Calls `params` on `peer`, its progress relayed to `relay`.
    pub(super) async fn call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        relay: Option<Progress>,
    ) -> Result<CallToolResult, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let _registered = relay.map(|relay| self.register(handle.progress_token.clone(), relay));
        let mut pending = Pending {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response().await;
        pending.id = None;
        match answer? {
            ServerResult::CallToolResult(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// Relays `token`'s notifications to `relay` (those come early first) until the
    /// registration is dropped.
    fn register(&self, token: ProgressToken, relay: Progress) -> Registered<'_> {
        let mut slots = self.slots();
        if let Some(at) = slots.early.iter().position(|(t, _)| *t == token)
            && let Some((_, notes)) = slots.early.remove(at)
        {
            notes.into_iter().for_each(|data| relay.send(data));
        }
        slots.relays.insert(token.clone(), relay);
        Registered {
            relays: self,
            token,
        }
    }
}

/// A call's registration, removed when dropped.
struct Registered<'r> {
    relays: &'r Relays,
    token: ProgressToken,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.relays.slots().relays.remove(&self.token);
    }
}

/// A call sent and not yet answered: dropped before its answer, it is cancelled upstream.
struct Pending {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "the gateway's call was cancelled".to_owned();
            let cancelled = CancelledNotificationParam::new(Some(id), Some(reason));
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}

/// A progress notification as a `tool_progress` event's data: `step`, `total` and
/// `message`, as the layer's own progress reads.
fn data(params: &ProgressNotificationParam) -> Value {
    let mut data = json!({"step": params.progress});
    if let Some(total) = params.total {
        data["total"] = json!(total);
    }
    if let Some(message) = &params.message {
        data["message"] = json!(message);
    }
    data
}

//! Approvals kept in Redis (halo-axum's `HaloBuilder::redis`), so that any replica lists,
//! reads and decides them, and each approved call runs exactly once across replicas.
//!
//! What is stored: each approval's document (tool, caller, method, target, redacted
//! arguments, times, decision, the answer of its run), its bounds (the approvals and bytes
//! of the layer, each caller's quota) and its idempotency key's index ([`scripts`]). The held
//! request itself (head, body, the caller's principal and credentials) stays in the memory of
//! the replica that received it, which runs it once approved. Only when the layer was given
//! the app it wraps (halo-axum's `HaloLayer::take_over_with`) is a copy kept in the record
//! too (`kept`: no credentials), so that another replica can route and run it through that
//! app when the holder stops (halo-axum's `layer::held::takeover`); it is dropped once the
//! call ran or cannot run.
//!
//! Who runs an approved call: the replica that holds it. When it decides itself, it runs the
//! call at once; when another replica approves, that one leaves it unassigned and waits, and
//! the holder, which follows its own approvals ([`follow`]: one script every [`POLL`]),
//! takes it ([`TAKE`](scripts)) and runs it, so a waiting stream carries the call's own
//! events. Every replica then reads the kept answer. A decision elsewhere reaches a waiting
//! stream within [`POLL`]. While it holds approvals a replica keeps a heartbeat in Redis; a
//! pending approval whose holder stopped can never run, and expires when it is next read, as
//! one nobody decided in time does: expiry never waits for a particular replica. With a copy
//! of its request kept, it stays pending instead, and once approved the first replica that
//! claims it ([`CLAIM`](scripts)) runs it.
//!
//! When Redis cannot be reached, nothing falls back to memory (that would split the book): a
//! call that needs approval is refused with `503`, and so are reads and decisions.

mod codec;
mod scripts;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, UNIX_EPOCH};

use self::codec::{Record, records};
use self::scripts::Lua;
use super::book::{Asked, Booked, Decided, Found, Pending, Reached, Unreachable, Withdrawn};
use super::entry::{Answer, Entry, Kept, Made, Phase, State, head_size};
use super::{ApprovalLimits, Verdict};
use crate::redis::{Operation, RedisLink, encode_headers};

/// How often a replica reads the state of the approvals it holds (and how often a replica
/// that waits on another's approval reads it again).
pub const POLL: Duration = Duration::from_millis(200);

/// A write of an answer Redis did not take is tried again this often, for as long as the
/// approval is kept.
/// The hash tag of every approval key: the scripts read an approval with the indexes and
/// quotas of all, so a Redis Cluster keeps them in one slot.
const SLOT: &str = "approvals";

const RETRY_EVERY: Duration = Duration::from_millis(250);

/// The approvals of one layer, in Redis ([`Book::in_redis`](super::Book::in_redis)).
#[derive(Debug)]
pub struct RedisBook<R> {
    link: RedisLink,
    /// The names of the layer's tools, by index.
    tools: Vec<String>,
    /// This replica, as the runner of the approvals it approves.
    replica: String,
    /// The approvals this replica holds, not over yet.
    own: Mutex<HashMap<Arc<str>, Arc<Entry<R>>>>,
    /// Whether the task that follows them runs.
    following: AtomicBool,
    /// How long this replica's heartbeat lives without being renewed (it is renewed every
    /// [`POLL`] while the replica holds approvals): how soon the approvals of a replica that
    /// stopped expire (or may be taken over), and how long an outage of Redis may last
    /// before they do (`ApprovalLimits::holder_timeout`).
    heartbeat_life: Duration,
}

impl<R> RedisBook<R> {
    pub(crate) fn new(link: RedisLink, tools: Vec<String>, heartbeat_life: Duration) -> Self {
        Self {
            link,
            tools,
            replica: uuid::Uuid::new_v4().simple().to_string(),
            own: Mutex::new(HashMap::new()),
            following: AtomicBool::new(false),
            heartbeat_life,
        }
    }

    fn own(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Entry<R>>>> {
        self.own.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes approval `id`, approved with no runner, to run here: whether it was taken.
    async fn take(&self, id: &str) -> bool {
        let key = self.entry_key(id);
        let taken: Option<i64> = self
            .link
            .run(
                Operation::new("approvals", "take"),
                Lua::Take.script(),
                &[&key],
                &[self.replica.as_bytes()],
            )
            .await;
        taken == Some(1)
    }

    /// Claims approval `id`, approved with no runner, to run here because the replica that
    /// held it has stopped: the request it kept for another replica, once claimed.
    pub async fn claim(&self, id: &str) -> Option<Vec<u8>> {
        let (key, heartbeat) = (self.entry_key(id), self.heartbeat());
        let life = millis(self.heartbeat_life);
        let claimed: Option<Option<Vec<u8>>> = self
            .link
            .run(
                Operation::new("approvals", "claim"),
                Lua::Claim.script(),
                &[&key, &heartbeat],
                &[self.replica.as_bytes(), life.as_bytes()],
            )
            .await;
        claimed.flatten()
    }

    /// Follows `entry`, claimed by this replica to run here, as one of its own.
    pub fn adopt<F: Follower<R>>(&self, entry: &Arc<Entry<R>>, follower: &Arc<F>)
    where
        R: Send + 'static,
    {
        self.own().insert(Arc::clone(&entry.id), Arc::clone(entry));
        self.follow(follower);
    }

    fn entry_key(&self, id: &str) -> String {
        self.link.key(SLOT, "approval:", id)
    }

    /// This replica's heartbeat.
    fn heartbeat(&self) -> String {
        self.link.key(SLOT, "approval-replica:", &self.replica)
    }

    /// The set of every approval, and the bytes each counts.
    fn bounds(&self) -> (String, String) {
        (
            self.link.key(SLOT, "approvals", ""),
            self.link.key(SLOT, "approvals:bytes", ""),
        )
    }

    /// Books a held call.
    pub(crate) async fn book(
        &self,
        limits: &ApprovalLimits,
        mut asked: Asked<R>,
    ) -> Reached<Booked<R>> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        // With a request kept for another replica, that is what counts.
        let size = asked.portable.as_ref().map_or_else(
            || asked.kept.body.len() + head_size(&asked.kept.parts),
            Vec::len,
        );
        let (all, bytes) = self.bounds();
        let caller = self.link.digest_key(SLOT, "approval-caller:", &asked.quota);
        let (index, digest) = match &asked.key {
            Some((key, digest)) => (
                self.link.digest_key(SLOT, "approval-key:", key),
                hex(digest),
            ),
            None => (self.link.key(SLOT, "approval-key:", "-"), String::new()),
        };
        let request = &asked.request;
        let mut fields: Vec<(&str, Vec<u8>)> = vec![
            ("tool", request.tool.clone().into_bytes()),
            ("method", request.method.clone().into_bytes()),
            ("target", request.target.clone().into_bytes()),
            ("trail", encode_headers(&asked.trail)),
        ];
        if let Some(caller) = &request.caller {
            fields.push(("caller", caller.clone().into_bytes()));
        }
        if let Some(arguments) = &request.arguments {
            fields.push(("args", arguments.to_string().into_bytes()));
        }
        if let Some(portable) = asked.portable.take() {
            fields.push(("kept", portable));
        }
        let numbers = [
            size.to_string(),
            limits.approvals.to_string(),
            limits.per_caller.to_string(),
            limits.bytes.to_string(),
            millis(limits.expire_after),
            millis(limits.keep_decided),
            millis(self.heartbeat_life),
        ];
        let keyed = if asked.key.is_some() { "1" } else { "0" };
        let mut args: Vec<&[u8]> = vec![id.as_bytes(), keyed.as_bytes(), digest.as_bytes()];
        args.extend(numbers.iter().map(String::as_bytes));
        for (name, value) in &fields {
            args.push(name.as_bytes());
            args.push(value);
        }
        let (key, heartbeat) = (self.entry_key(&id), self.heartbeat());
        let keys = [key.as_str(), &all, &bytes, &caller, &index, &heartbeat];
        let answer: Vec<Vec<u8>> = self
            .link
            .run(
                Operation::new("approvals", "book"),
                Lua::Book.script(),
                &keys,
                &args,
            )
            .await
            .ok_or(Unreachable)?;
        let number = |index: usize| -> u64 {
            answer
                .get(index)
                .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
                .unwrap_or(0)
        };
        match answer.first().map(Vec::as_slice) {
            Some(b"new") => {
                let made = Made {
                    id: Arc::from(id.as_str()),
                    tool: asked.tool,
                    request: asked.request,
                    quota: asked.quota,
                    key: asked.key,
                    requested_at: UNIX_EPOCH + Duration::from_millis(number(1)),
                    expires_at: UNIX_EPOCH + Duration::from_millis(number(2)),
                    trail: asked.trail,
                };
                let kept = State::Pending(Some(Box::new(asked.kept)));
                let entry = Arc::new(Entry::new(made, kept, size));
                self.own().insert(Arc::clone(&entry.id), Arc::clone(&entry));
                Ok(Booked::New(entry))
            }
            Some(b"again") => {
                let id = String::from_utf8_lossy(answer.get(1).map_or(&[][..], Vec::as_slice));
                match self.find(&id).await? {
                    Some((entry, expired)) => Ok(Booked::Again(entry, expired)),
                    // Forgotten between the two reads: its key is free again.
                    None => Err(Unreachable),
                }
            }
            Some(b"mismatch") => Ok(Booked::Mismatch),
            Some(which @ (b"caller" | b"full")) => {
                let wait = Duration::from_millis(number(1)).max(Duration::from_secs(1));
                Ok(Booked::Full(which == b"caller", wait))
            }
            _ => Err(Unreachable),
        }
    }

    /// Reads approvals by id: their records (expired when due), in order; renews this
    /// replica's heartbeat when `alive`.
    async fn read(&self, ids: &[&str], alive: bool) -> Reached<Vec<Option<Vec<u8>>>> {
        let (heartbeat, bytes) = (self.heartbeat(), self.bounds().1);
        let keys: Vec<String> = ids.iter().map(|id| self.entry_key(id)).collect();
        let mut names: Vec<&str> = vec![&heartbeat, &bytes];
        names.extend(keys.iter().map(String::as_str));
        let lifetime = if alive {
            millis(self.heartbeat_life)
        } else {
            "0".to_owned()
        };
        let mut args: Vec<&[u8]> = vec![lifetime.as_bytes()];
        args.extend(ids.iter().map(|id| id.as_bytes()));
        self.link
            .run(
                Operation::new("approvals", "read"),
                Lua::Read.script(),
                &names,
                &args,
            )
            .await
            .ok_or(Unreachable)
    }

    /// The approval with this id: this replica's own (brought up to date), or as Redis
    /// holds it.
    pub(crate) async fn find(&self, id: &str) -> Reached<Option<Found<R>>> {
        let answer = self.read(&[id], false).await?;
        let Some(record) = records(&answer).into_iter().next() else {
            return Ok(None);
        };
        Ok(self.entry(&record).map(|entry| (entry, record.expired)))
    }

    /// The entry of `record`: this replica's own, brought up to date, or a new one (also
    /// for its own approved elsewhere and not taken yet, which it still holds as pending).
    fn entry(&self, record: &Record<'_>) -> Option<Arc<Entry<R>>> {
        let own = self.own().get(record.id).cloned();
        if let Some(entry) = own {
            self.update(&entry, record);
            let behind = entry.phase() == Phase::Pending && record.phase() != Some(Phase::Pending);
            if !behind {
                return Some(entry);
            }
        }
        record.entry(&self.tools).map(Arc::new)
    }

    /// Moves this replica's own `entry` to the state Redis holds: not while it runs here, nor
    /// while it waits for a runner (this replica takes it: [`follow`]).
    fn update(&self, entry: &Entry<R>, record: &Record<'_>) {
        let runner = record.runner();
        let ours =
            runner.is_none_or(|runner| runner.is_empty() || runner == self.replica.as_bytes());
        if ours && record.state_word() == Some(b"approved") {
            return;
        }
        match record.state() {
            Some(State::Pending(_)) => {}
            Some(state) => {
                entry.advance(state);
            }
            // Gone from Redis (forgotten, or the data lost): nothing will happen to it.
            None => {
                entry.advance(State::Expired);
            }
        }
    }

    /// The approvals still pending; and those this read expired.
    pub(crate) async fn pending(&self) -> Reached<Pending<R>> {
        let (all, bytes) = self.bounds();
        let prefix = self.link.key(SLOT, "approval:", "");
        let answer: Vec<Option<Vec<u8>>> = self
            .link
            .run(
                Operation::new("approvals", "list"),
                Lua::List.script(),
                &[&all, &bytes],
                &[prefix.as_bytes()],
            )
            .await
            .ok_or(Unreachable)?;
        let mut pending = Vec::new();
        let mut expired = Vec::new();
        for record in records(&answer) {
            if let Some(entry) = self.entry(&record) {
                match record.expired {
                    true => expired.push(entry),
                    false => pending.push(entry),
                }
            }
        }
        Ok((pending, expired))
    }

    /// Runs `lua`, a script that settles the entry `id` (as the operation `name`), on the
    /// book's bounds and the entry, with `args`: the words of its answer.
    async fn settle(
        &self,
        name: &'static str,
        lua: Lua,
        id: &str,
        args: &[&[u8]],
    ) -> Reached<Words> {
        let (all, bytes) = self.bounds();
        let key = self.entry_key(id);
        self.link
            .run(
                Operation::new("approvals", name),
                lua.script(),
                &[&all, &bytes, &key],
                args,
            )
            .await
            .map(Words)
            .ok_or(Unreachable)
    }

    /// Decides `entry`: approved, the request to run here when this replica holds it, else
    /// left to the replica that does.
    pub(crate) async fn decide(
        &self,
        limits: &ApprovalLimits,
        entry: &Entry<R>,
        verdict: &Verdict,
    ) -> Reached<Decided<R>> {
        let holds = entry.with_state(|state| matches!(state, State::Pending(Some(_))));
        let approve = if verdict.is_approved() { "1" } else { "0" };
        let runner = if holds { self.replica.as_str() } else { "" };
        let decided = State::decided(verdict);
        let (by, reason) = match &decided {
            State::Approved { by, reason, .. } | State::Denied { by, reason } => {
                (by.as_str(), reason.as_deref().unwrap_or(""))
            }
            _ => ("", ""),
        };
        let keep = millis(limits.keep_decided);
        let args: [&[u8]; 6] = [
            entry.id.as_bytes(),
            approve.as_bytes(),
            by.as_bytes(),
            reason.as_bytes(),
            keep.as_bytes(),
            runner.as_bytes(),
        ];
        let answer = self.settle("decide", Lua::Decide, &entry.id, &args).await?;
        Ok(match answer.word(0) {
            b"run" => match entry.advance(decided) {
                Some(kept) => Decided::Run(kept),
                None => Decided::Elsewhere,
            },
            b"denied" => {
                entry.advance(decided);
                Decided::Denied
            }
            b"expired" => {
                entry.advance(State::Expired);
                Decided::Already(Phase::Expired, true)
            }
            b"was" => Decided::Already(was(answer.word(1)), false),
            // Forgotten since it was read.
            _ => Decided::Already(Phase::Expired, false),
        })
    }

    /// Withdraws `entry` for its caller: moves it to `cancelled` (a [`State::Cancelled`])
    /// in Redis, and here; the replica that holds it drops its request when it next reads
    /// it ([`follow`]).
    pub(crate) async fn withdraw(
        &self,
        limits: &ApprovalLimits,
        entry: &Entry<R>,
        cancelled: State<R>,
    ) -> Reached<Withdrawn> {
        let (by, reason) = match &cancelled {
            State::Cancelled { by, reason } => (by.as_deref().unwrap_or(""), reason.as_str()),
            _ => ("", ""),
        };
        let keep = millis(limits.keep_decided);
        let args: [&[u8]; 4] = [
            entry.id.as_bytes(),
            by.as_bytes(),
            reason.as_bytes(),
            keep.as_bytes(),
        ];
        let answer = self
            .settle("withdraw", Lua::Withdraw, &entry.id, &args)
            .await?;
        Ok(match answer.word(0) {
            b"cancelled" => {
                entry.advance(cancelled);
                Ok(())
            }
            b"expired" => {
                entry.advance(State::Expired);
                Err((Phase::Expired, true))
            }
            b"was" => Err((was(answer.word(1)), false)),
            // Forgotten since it was read.
            _ => Err((Phase::Expired, false)),
        })
    }

    /// Keeps the answer of an approved call's run, here at once and in Redis (again and
    /// again while Redis does not take it, for as long as the approval is kept).
    pub(crate) async fn finish(
        &self,
        limits: &ApprovalLimits,
        entry: &Entry<R>,
        mut answer: Answer,
    ) {
        if answer
            .body
            .as_ref()
            .is_some_and(|body| body.len() > limits.answer_bytes)
        {
            answer.body = None;
        }
        let write = Finish {
            link: self.link.clone(),
            keys: [self.bounds().0, self.bounds().1, self.entry_key(&entry.id)],
            id: entry.id.to_string(),
            answer: answer.clone(),
            bytes: limits.bytes.to_string(),
            keep: millis(limits.keep_decided),
        };
        match write.write().await {
            Some(kept) => {
                if !kept {
                    answer.body = None;
                }
            }
            None => {
                let until = tokio::time::Instant::now() + limits.keep_decided;
                tokio::spawn(async move {
                    while tokio::time::Instant::now() < until {
                        tokio::time::sleep(RETRY_EVERY).await;
                        if write.write().await.is_some() {
                            return;
                        }
                    }
                });
            }
        }
        entry.ran(answer);
    }

    /// Forgets this replica's own approval `id`.
    pub(crate) fn forget(&self, id: &str) {
        self.own().remove(id);
    }

    /// This replica's own approval `id`, while it is not over.
    #[must_use]
    pub fn own_entry(&self, id: &str) -> Option<Arc<Entry<R>>> {
        self.own().get(id).cloned()
    }

    /// Follows this replica's own approvals (one task, while there are some).
    pub fn follow<F: Follower<R>>(&self, follower: &Arc<F>)
    where
        R: Send + 'static,
    {
        if !self.following.swap(true, Ordering::AcqRel) {
            tokio::spawn(follow(Arc::downgrade(follower)));
        }
    }
}

/// What follows a replica's own approvals kept in Redis: the layer, which runs an approved
/// call and records an expiry (the book knows neither the app nor the audit trail).
pub trait Follower<R>: Send + Sync + 'static {
    /// The Redis book, while the approvals are kept there.
    fn book(&self) -> Option<&RedisBook<R>>;

    /// Runs `entry`'s approved request `kept`, approved by `by`, here.
    fn run(self: &Arc<Self>, entry: &Arc<Entry<R>>, kept: Kept<R>, by: &str);

    /// Records that `entry` expired (Redis found it due).
    fn expired(&self, entry: &Entry<R>);
}

/// Reads the state of the replica's own approvals every [`POLL`], until none is left: moves
/// each to where Redis has it (so a stream waiting on it ends), records the expiries it
/// made, and forgets those that are over.
async fn follow<F: Follower<R>, R: Send + 'static>(weak: Weak<F>) {
    loop {
        tokio::time::sleep(POLL).await;
        let Some(follower) = weak.upgrade() else {
            return;
        };
        let Some(book) = follower.book() else {
            return;
        };
        let entries: Vec<Arc<Entry<R>>> = book.own().values().cloned().collect();
        if entries.is_empty() {
            book.following.store(false, Ordering::Release);
            // One added after the look and before the store would not be followed.
            if book.own().is_empty() || book.following.swap(true, Ordering::AcqRel) {
                return;
            }
            continue;
        }
        let ids: Vec<&str> = entries.iter().map(|entry| &*entry.id).collect();
        let Ok(answer) = book.read(&ids, true).await else {
            continue;
        };
        let by_id: HashMap<&str, &Arc<Entry<R>>> =
            entries.iter().map(|entry| (&*entry.id, entry)).collect();
        for record in records(&answer) {
            let Some(&entry) = by_id.get(record.id) else {
                continue;
            };
            // Approved elsewhere, left to this replica, which holds the request: run it here.
            if record.state_word() == Some(b"approved")
                && record.runner().is_none_or(<[u8]>::is_empty)
                && book.take(&entry.id).await
                && let Some(state @ State::Approved { .. }) = record.state()
            {
                let by = match &state {
                    State::Approved { by, .. } => by.clone(),
                    _ => String::new(),
                };
                if let Some(kept) = entry.advance(state) {
                    follower.run(entry, *kept, &by);
                }
                continue;
            }
            book.update(entry, &record);
            if record.expired {
                follower.expired(entry);
            }
            if entry.phase().is_over() || record.phase().is_none() {
                book.forget(&entry.id);
            }
        }
    }
}

/// The write of an answer to Redis.
struct Finish {
    link: RedisLink,
    keys: [String; 3],
    id: String,
    answer: Answer,
    bytes: String,
    keep: String,
}

impl Finish {
    /// Whether the body was kept; `None` when Redis could not be reached.
    async fn write(&self) -> Option<bool> {
        let status = self.answer.status.as_u16().to_string();
        let mut headers = http::HeaderMap::new();
        headers.extend(self.answer.headers.iter().cloned());
        let headers = encode_headers(&headers);
        let (body, has_body) = match &self.answer.body {
            Some(body) => (&body[..], "1"),
            None => (&[][..], "0"),
        };
        let args: [&[u8]; 7] = [
            self.id.as_bytes(),
            status.as_bytes(),
            &headers,
            body,
            has_body.as_bytes(),
            self.bytes.as_bytes(),
            self.keep.as_bytes(),
        ];
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        let kept: i64 = self
            .link
            .run(
                Operation::new("approvals", "finish"),
                Lua::Finish.script(),
                &keys,
                &args,
            )
            .await?;
        Some(kept == 1)
    }
}

/// The phase of an approval that was not pending, by the state word a script answered.
fn was(state: &[u8]) -> Phase {
    match state {
        b"approved" => Phase::Running,
        b"ran" => Phase::Ran,
        b"denied" => Phase::Denied,
        b"cancelled" => Phase::Cancelled,
        _ => Phase::Expired,
    }
}

/// The words of a script's answer.
struct Words(Vec<Option<Vec<u8>>>);

impl Words {
    /// The word at `index`; empty when there is none.
    fn word(&self, index: usize) -> &[u8] {
        self.0
            .get(index)
            .and_then(Option::as_deref)
            .unwrap_or_default()
    }
}

/// A duration as a script argument: whole milliseconds, at least 1.
fn millis(duration: Duration) -> String {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
}

/// 64 hex digits.
fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

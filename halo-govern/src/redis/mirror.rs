//! The events of streamed calls copied, in order, to a Redis stream, so that a client can
//! resume a call through any instance.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use redis::Script;

use super::Inner;
use super::codec::millis;
use super::connection::{Operation, RETRY_EVERY, script};
use crate::store::{KeptCall, Mirror, MirroredFrame, ReplayStore, StoreFuture, Unavailable};

/// Appends event `ARGV[1]` (framed: `ARGV[2]`; terminal: `ARGV[3]`) to the stream `KEYS[1]`
/// unless it is there already, keeping at most `ARGV[6]` events, and describes the call in
/// `KEYS[2]` (tool `ARGV[4]`, caller `ARGV[5]`); both live `ARGV[7]` ms.
const APPEND: &str = r"
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if newest and tonumber(string.match(newest[1], '^%d+')) >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[6], ARGV[1] .. '-0', 'd', ARGV[2])
redis.call('HSET', KEYS[2], 'tool', ARGV[4], 'caller', ARGV[5], 'finished', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
return 1
";

/// Keeps the call of `KEYS` alive for `ARGV[1]` ms more, unless it has ended.
const TOUCH: &str = r"
if redis.call('HGET', KEYS[2], 'finished') == '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return 1
";

/// The call of `KEYS`: tool, caller, finished, oldest and newest ids, then id and frame of up
/// to 256 events after `ARGV[1]`; nothing when it is not kept.
const READ: &str = r"
local about = redis.call('HMGET', KEYS[2], 'tool', 'caller', 'finished')
if not about[1] then return {} end
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local out = {about[1], about[2], about[3], oldest and oldest[1] or '0-0', newest and newest[1] or '0-0'}
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', 256)) do
  table.insert(out, entry[1])
  table.insert(out, entry[2][2])
end
return out
";

static APPEND_SCRIPT: OnceLock<Script> = OnceLock::new();
static TOUCH_SCRIPT: OnceLock<Script> = OnceLock::new();
static READ_SCRIPT: OnceLock<Script> = OnceLock::new();

/// How long the events of a running call live without news from its instance: the instance
/// renews it every third of this, so the call vanishes soon after its instance stops.
const RUNNING_LIFETIME: Duration = Duration::from_secs(60);

/// The event id of a stream entry id (`<event>-0`).
fn event_id(entry: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(entry).ok()?;
    text.split('-').next()?.parse().ok()
}

/// The streamed-call half of a [`RedisStore`](super::RedisStore).
#[derive(Debug)]
pub(crate) struct RedisCalls(pub(crate) Arc<Inner>);

impl RedisCalls {
    /// `<prefix>{call:<id>}` (its events) and `<prefix>{call:<id>}:about`, in one slot.
    fn keys(&self, id: &str) -> (String, String) {
        let tag = format!("call:{id}");
        (self.0.tagged(&tag, ""), self.0.tagged(&tag, ":about"))
    }
}

/// Copies the events queued for a call to Redis, in order, until its terminal one; keeps the
/// call alive while it runs. Past the most events kept, the oldest queued ones are dropped
/// (ids keep counting, so a client sees the gap), as in memory.
async fn copy_events(
    inner: Arc<Inner>,
    keys: (String, String),
    about: (String, String),
    mut queue: tokio::sync::mpsc::UnboundedReceiver<MirroredFrame>,
) {
    let keys = [keys.0.as_str(), keys.1.as_str()];
    let (max, running) = (inner.max_events.to_string(), millis(RUNNING_LIFETIME));
    let mut renew = tokio::time::interval(RUNNING_LIFETIME / 3);
    loop {
        let frame = tokio::select! {
            frame = queue.recv() => frame,
            _ = renew.tick() => {
                let _ = inner
                    .run::<i64>(Operation::new("streams", "touch"), script(&TOUCH_SCRIPT, TOUCH), &keys, &[running.as_bytes()])
                    .await;
                continue;
            }
        };
        let Some(mut frame) = frame else { return };
        let ended = millis(inner.retention);
        loop {
            let (id, terminal) = (frame.id.to_string(), if frame.terminal { "1" } else { "0" });
            let lifetime = if frame.terminal { &ended } else { &running };
            let args: [&[u8]; 7] = [
                id.as_bytes(),
                &frame.bytes,
                terminal.as_bytes(),
                about.0.as_bytes(),
                about.1.as_bytes(),
                max.as_bytes(),
                lifetime.as_bytes(),
            ];
            if inner
                .run::<i64>(
                    Operation::new("streams", "append"),
                    script(&APPEND_SCRIPT, APPEND),
                    &keys,
                    &args,
                )
                .await
                .is_some()
            {
                break;
            }
            tokio::time::sleep(RETRY_EVERY).await;
            while queue.len() >= inner.max_events {
                match queue.recv().await {
                    Some(newer) => frame = newer,
                    None => return,
                }
            }
        }
        if frame.terminal {
            return;
        }
    }
}

impl ReplayStore for RedisCalls {
    fn mirror(&self, id: &str, tool: &str, caller: Option<&str>) -> Mirror {
        let (sender, queue) = tokio::sync::mpsc::unbounded_channel();
        let caller = caller.map_or_else(|| "a".to_owned(), |id| format!("p{id}"));
        tokio::spawn(copy_events(
            Arc::clone(&self.0),
            self.keys(id),
            (tool.to_owned(), caller),
            queue,
        ));
        Mirror(sender)
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<KeptCall>, Unavailable>> {
        Box::pin(async move {
            let (events, about) = self.keys(id);
            let after = after.to_string();
            let Some(answer) = self
                .0
                .run::<Vec<Vec<u8>>>(
                    Operation::new("streams", "read"),
                    script(&READ_SCRIPT, READ),
                    &[&events, &about],
                    &[after.as_bytes()],
                )
                .await
            else {
                return Err(Unavailable);
            };
            if answer.len() < 5 {
                return Ok(None);
            }
            let mut frames = Vec::with_capacity((answer.len() - 5) / 2);
            let mut rest = answer[5..].chunks_exact(2);
            for pair in rest.by_ref() {
                if let Some(id) = event_id(&pair[0]) {
                    frames.push((id, Bytes::copy_from_slice(&pair[1])));
                }
            }
            let caller = match answer[1].split_first() {
                Some((b'p', id)) => Some(String::from_utf8_lossy(id).into_owned()),
                _ => None,
            };
            Ok(Some(KeptCall {
                tool: String::from_utf8_lossy(&answer[0]).into_owned(),
                caller,
                finished: answer[2] == b"1",
                oldest: event_id(&answer[3]).unwrap_or(0),
                newest: event_id(&answer[4]).unwrap_or(0),
                frames,
            }))
        })
    }
}

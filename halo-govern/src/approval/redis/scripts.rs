//! The Lua scripts that keep approvals in Redis. Every change of state is one script, so
//! that replicas never take one approval two ways: pending → approved, denied, expired or
//! cancelled (withdrawn by its caller), approved → ran. Timed by Redis's clock (`TIME`, in ms), which every replica shares.
//!
//! The keys, under the store's prefix and in one hash slot (`{approvals}`, so that a Redis
//! Cluster runs each script on one node):
//!
//! - `approval:<id>`, a hash: the approval (`state`, `tool`, `caller`, `method`, `target`,
//!   `args`, `req_at`, `exp`, `trail`, `by`, `reason`, `runner`, the answer `a_status`,
//!   `a_headers`, `a_body`), and the keys of its caller's quota (`cidx`), its idempotency
//!   key's index (`kidx`) and its holder's heartbeat (`hb`); with taking over on, `kept`,
//!   the request without credentials, until it ran or can no longer run. It lives until its drop time:
//!   `keep` after its decision, expiry or run (at first `exp + keep`).
//! - `approval-replica:<id>`, a replica's heartbeat while it holds approvals: a pending
//!   approval whose holder's heartbeat is gone can never run, and expires when read, unless
//!   it has `kept` (another replica may run it: [`CLAIM`]).
//! - `approvals`, a sorted set of ids by drop time, and `approvals:bytes`, a hash of the
//!   bytes each counts: the layer's bounds (approvals, bytes) across replicas. Ids past their
//!   drop time are swept when a call is booked or the list is read.
//! - `approval-caller:<digest>`, a sorted set of a caller's ids by drop time (its quota).
//! - `approval-key:<digest>`, the digest of the request (64 hex digits) and the id of the
//!   approval asked for with an idempotency key, until that approval's drop time.
//!
//! Scripts that read an approval (`READ`, `LIST`, `DECIDE`, `WITHDRAW`) expire it first when it is
//! pending and due (or its holder is gone and it kept no request), and say so, so that exactly one replica records the expiry, and an
//! approval expires on time even when no replica watches it.

use std::sync::OnceLock;

use ::redis::Script;

/// The clock, and what every script shares: `keep_until` (moves an approval's drop time),
/// `free` (forgets its request), `expire_if_due`, and `record` (an approval as the replicas
/// read it: id, whether this script expired it, then [`FIELDS`]).
macro_rules! prelude {
    () => {
        r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local FIELDS = {'state', 'tool', 'caller', 'method', 'target', 'args', 'req_at', 'exp',
  'trail', 'by', 'reason', 'runner', 'a_status', 'a_headers', 'a_body'}
local function ms(n) return string.format('%d', n) end
local function keep_until(entry, all, id, drop)
  redis.call('PEXPIREAT', entry, ms(drop))
  redis.call('ZADD', all, 'XX', ms(drop), id)
  local c = redis.call('HGET', entry, 'cidx')
  if c then
    redis.call('ZADD', c, 'XX', ms(drop), id)
    if redis.call('PTTL', c) < drop - now then redis.call('PEXPIREAT', c, ms(drop)) end
  end
  local k = redis.call('HGET', entry, 'kidx')
  if k then redis.call('PEXPIREAT', k, ms(drop)) end
end
local function free(entry, sizes, id)
  if redis.call('HGET', entry, 'state') == 'approved' and redis.call('HEXISTS', entry, 'kept') == 1 then
    return
  end
  redis.call('HDEL', entry, 'kept')
  if redis.call('HEXISTS', sizes, id) == 1 then redis.call('HSET', sizes, id, 0) end
end
local function expire_if_due(entry, sizes, id)
  local v = redis.call('HMGET', entry, 'state', 'exp', 'hb', 'kept')
  if v[1] == 'pending' and (now >= tonumber(v[2])
      or (not v[4] and redis.call('EXISTS', v[3]) == 0)) then
    redis.call('HSET', entry, 'state', 'expired')
    free(entry, sizes, id)
    return 1
  end
  return 0
end
local function record(out, entry, id, flag)
  table.insert(out, id)
  table.insert(out, tostring(flag))
  local v = redis.call('HMGET', entry, unpack(FIELDS))
  for i = 1, #FIELDS do table.insert(out, v[i]) end
end
local function sweep(all, sizes)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', all, '-inf', ms(now))) do
    redis.call('HDEL', sizes, id)
  end
  redis.call('ZREMRANGEBYSCORE', all, '-inf', ms(now))
end
local function bytes(sizes)
  local total = 0
  for _, n in ipairs(redis.call('HVALS', sizes)) do total = total + tonumber(n) end
  return total
end
"
    };
}

/// The values a [`record`](prelude) holds after the id and the flag, in order.
pub(super) const FIELDS: usize = 15;

/// Books approval `ARGV[1]` in `KEYS[1]` (all: `KEYS[2]`, bytes: `KEYS[3]`, the caller's:
/// `KEYS[4]`, the key's index: `KEYS[5]` when `ARGV[2]` is `1`, with the request's digest
/// `ARGV[3]`), counting `ARGV[4]` bytes, within `ARGV[5]` approvals, `ARGV[6]` per caller and
/// `ARGV[7]` bytes; it expires in `ARGV[8]` ms and is kept `ARGV[9]` ms after; its holder's
/// heartbeat `KEYS[6]` lives `ARGV[10]` ms more; its fields are `ARGV[11..]`, by pairs. Answers `{'new', requested ms, expires ms}`, `{'again', id}`,
/// `{'mismatch'}`, or `{'caller' | 'full', ms until room}`.
const BOOK: &str = concat!(
    prelude!(),
    r"
sweep(KEYS[2], KEYS[3])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ms(now))
if ARGV[2] == '1' then
  local known = redis.call('GET', KEYS[5])
  if known then
    if string.sub(known, 1, 64) == ARGV[3] then return {'again', string.sub(known, 65)} end
    return {'mismatch'}
  end
end
local function soonest(set)
  local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  if first[2] then return ms(math.max(0, tonumber(first[2]) - now)) end
  return '0'
end
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[6]) then return {'caller', soonest(KEYS[4])} end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5])
  or bytes(KEYS[3]) + tonumber(ARGV[4]) > tonumber(ARGV[7]) then
  return {'full', soonest(KEYS[2])}
end
local exp = now + tonumber(ARGV[8])
local drop = exp + tonumber(ARGV[9])
local fields = {}
for i = 11, #ARGV do table.insert(fields, ARGV[i]) end
redis.call('SET', KEYS[6], '1', 'PX', ARGV[10])
redis.call('HSET', KEYS[1], 'state', 'pending', 'req_at', ms(now), 'exp', ms(exp),
  'cidx', KEYS[4], 'hb', KEYS[6], unpack(fields))
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'kidx', KEYS[5])
  redis.call('SET', KEYS[5], ARGV[3] .. ARGV[1])
  redis.call('PEXPIREAT', KEYS[5], ms(drop))
end
redis.call('PEXPIREAT', KEYS[1], ms(drop))
redis.call('ZADD', KEYS[2], ms(drop), ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[4], ms(drop), ARGV[1])
redis.call('PEXPIREAT', KEYS[4], ms(drop))
return {'new', ms(now), ms(exp)}
"
);

/// The approvals `ARGV[2..]` at `KEYS[3..]` (bytes: `KEYS[2]`), each a record; one that is
/// gone has no state. When `ARGV[1]` is not `0`, the reader's heartbeat `KEYS[1]` lives that
/// many ms more.
const READ: &str = concat!(
    prelude!(),
    r"
if ARGV[1] ~= '0' then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
local out = {}
for i = 3, #KEYS do
  local id = ARGV[i - 1]
  local flag = 0
  if redis.call('EXISTS', KEYS[i]) == 1 then flag = expire_if_due(KEYS[i], KEYS[2], id) end
  record(out, KEYS[i], id, flag)
end
return out
"
);

/// The pending approvals of the set `KEYS[1]` (bytes: `KEYS[2]`; each at `ARGV[1]` and its
/// id), and those this read expired, each a record.
const LIST: &str = concat!(
    prelude!(),
    r"
sweep(KEYS[1], KEYS[2])
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local entry = ARGV[1] .. id
  if redis.call('HGET', entry, 'state') == 'pending' then
    record(out, entry, id, expire_if_due(entry, KEYS[2], id))
  end
end
return out
"
);

/// Decides approval `ARGV[1]` at `KEYS[3]` (all: `KEYS[1]`, bytes: `KEYS[2]`): approved when
/// `ARGV[2]` is `1` (run by replica `ARGV[6]`, or when that is empty by the replica that
/// holds it, which takes it: [`TAKE`]), by `ARGV[3]`, for reason `ARGV[4]` (none when empty);
/// kept `ARGV[5]` ms after. Answers `{'run'}`, `{'denied'}`, `{'expired'}` when it found it
/// due (or its holder gone), `{'was', <state>}` when it was not pending, or `{'missing'}`.
const DECIDE: &str = concat!(
    prelude!(),
    r"
local v = redis.call('HMGET', KEYS[3], 'state', 'exp')
if not v[1] then return {'missing'} end
if v[1] ~= 'pending' then return {'was', v[1]} end
if expire_if_due(KEYS[3], KEYS[2], ARGV[1]) == 1 then return {'expired'} end
redis.call('HSET', KEYS[3], 'by', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[3], 'reason', ARGV[4]) end
local out
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[3], 'state', 'approved', 'runner', ARGV[6])
  out = {'run'}
else
  redis.call('HSET', KEYS[3], 'state', 'denied')
  out = {'denied'}
end
free(KEYS[3], KEYS[2], ARGV[1])
keep_until(KEYS[3], KEYS[1], ARGV[1], now + tonumber(ARGV[5]))
return out
"
);

/// Withdraws approval `ARGV[1]` at `KEYS[3]` (all: `KEYS[1]`, bytes: `KEYS[2]`) for its
/// caller: cancelled by `ARGV[2]` (none when empty, an anonymous caller), for reason
/// `ARGV[3]`; kept `ARGV[4]` ms after. Answers as [`DECIDE`] does, `{'cancelled'}` when it
/// withdrew it. One script with the decisions' own checks, so that of a withdrawal and an
/// approval at once exactly one takes the approval.
const WITHDRAW: &str = concat!(
    prelude!(),
    r"
local state = redis.call('HGET', KEYS[3], 'state')
if not state then return {'missing'} end
if state ~= 'pending' then return {'was', state} end
if expire_if_due(KEYS[3], KEYS[2], ARGV[1]) == 1 then return {'expired'} end
redis.call('HSET', KEYS[3], 'state', 'cancelled', 'reason', ARGV[3])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[3], 'by', ARGV[2]) end
free(KEYS[3], KEYS[2], ARGV[1])
keep_until(KEYS[3], KEYS[1], ARGV[1], now + tonumber(ARGV[4]))
return {'cancelled'}
"
);

/// Keeps the answer of approval `ARGV[1]`'s run at `KEYS[3]` (all: `KEYS[1]`, bytes:
/// `KEYS[2]`): status `ARGV[2]`, headers `ARGV[3]`, and body `ARGV[4]` when `ARGV[5]` is `1`
/// and it fits within `ARGV[6]` bytes in all; kept `ARGV[7]` ms after. Answers 1 when the
/// body was kept, 0 when not, -1 when the approval was not running.
const FINISH: &str = concat!(
    prelude!(),
    r"
if redis.call('HGET', KEYS[3], 'state') ~= 'approved' then return -1 end
redis.call('HDEL', KEYS[3], 'kept')
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then redis.call('HSET', KEYS[2], ARGV[1], 0) end
local kept = 0
if ARGV[5] == '1' and bytes(KEYS[2]) + string.len(ARGV[4]) <= tonumber(ARGV[6]) then
  redis.call('HSET', KEYS[3], 'a_body', ARGV[4])
  if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[1], string.len(ARGV[4]))
  end
  kept = 1
end
redis.call('HSET', KEYS[3], 'state', 'ran', 'a_status', ARGV[2], 'a_headers', ARGV[3])
keep_until(KEYS[3], KEYS[1], ARGV[1], now + tonumber(ARGV[7]))
return kept
"
);

/// Takes approval `KEYS[1]`, approved with no runner (the replica that approved it cannot
/// run it), for replica `ARGV[1]`: 1 when taken.
const TAKE: &str = r"
if redis.call('HGET', KEYS[1], 'state') == 'approved' and redis.call('HGET', KEYS[1], 'runner') == '' then
  redis.call('HSET', KEYS[1], 'runner', ARGV[1])
  return 1
end
return 0
";

/// Claims approval `KEYS[1]`, approved with no runner, for replica `ARGV[1]` (its heartbeat
/// `KEYS[2]`, which lives `ARGV[2]` ms more) when the replica that held it has stopped (its
/// heartbeat is gone) and the request was kept for another to run: the kept request, or nil.
const CLAIM: &str = r"
local v = redis.call('HMGET', KEYS[1], 'state', 'runner', 'hb', 'kept')
if v[1] ~= 'approved' or (v[2] and v[2] ~= '') or not v[4] then return false end
if v[3] and redis.call('EXISTS', v[3]) == 1 then return false end
redis.call('HSET', KEYS[1], 'runner', ARGV[1], 'hb', KEYS[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return v[4]
";

/// The scripts, by what they do.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lua {
    Book,
    Read,
    List,
    Decide,
    Finish,
    Take,
    Withdraw,
    Claim,
}

static SCRIPTS: [OnceLock<Script>; 8] = [const { OnceLock::new() }; 8];

impl Lua {
    /// The script, loaded once.
    pub(super) fn script(self) -> &'static Script {
        let code = match self {
            Self::Book => BOOK,
            Self::Read => READ,
            Self::List => LIST,
            Self::Decide => DECIDE,
            Self::Finish => FINISH,
            Self::Take => TAKE,
            Self::Withdraw => WITHDRAW,
            Self::Claim => CLAIM,
        };
        SCRIPTS[self as usize].get_or_init(|| Script::new(code))
    }
}

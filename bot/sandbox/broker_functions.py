"""The fleet's Redis functions: the only code Redis runs for it, loaded by the hosts.

Neither user may send a script of its own (`EVAL`, `SCRIPT LOAD`, `FUNCTION LOAD` for the
bots): one endless loop would make Redis answer BUSY to everyone until it restarts. The
bots call `admit` and `release` (`FCALL`); the hosts load this library when they join (and
again after a Redis that lost its data) and call `take`, `claim` and `renew`. Functions run
with the caller's own permissions, and Redis keeps them in its RDB and append-only log.
The names carry a hash of the source: bots and hosts of one release call the same code,
and a new release loads beside the old one instead of changing it under running bots.

How a job travels: a bot pushes it on its pool's inbox list (`RPUSH`: the bots' user can
add to the inbox, never remove, trim or read it), as one line of JSON saying whose it is
(`head`), a newline and the request. `take` moves one job from the inbox into the hosts'
own stream and delivers it to the calling host, inside Redis: the request comes out only
when the job is within the hosts' bound, so a host never reads more than that. `claim`
counts a takeover's delivery before anything is read, and leaves the request out of a job
delivered more often than a host may try it.
"""

from __future__ import annotations

import hashlib

from redis.exceptions import ResponseError

# Lua: `@V@` becomes the source's hash (the functions' names say which release they are).
_SOURCE = r"""
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- One atomic admission across every bot process: the learner's one run in flight, their
-- runs this minute, and the queue bound. Modes: "learner" (all three), "trial" (a deck's
-- exercise: one in flight per server and the queue bound; the engine rates uploads),
-- "anonymous" (a tool's run: the queue bound only), "again" (a run lost with the queue,
-- sent once more: the queue bound only). Replies {"ok", now} (Redis's clock: the run's
-- deadline starts there) or {"learner"|"rate"|"full", wait_ms}.
local function admit(keys, args)
  local now = now_ms()
  local rid, patience, per_minute = args[1], tonumber(args[2]), tonumber(args[3])
  local queue_max, mode = tonumber(args[4]), args[5]
  redis.call('ZREMRANGEBYSCORE', keys[3], '-inf', now)
  if mode == 'learner' or mode == 'trial' then
    local holder = redis.call('GET', keys[1])
    if holder and holder ~= rid then return {'learner', 0} end
  end
  if mode == 'learner' then
    redis.call('ZREMRANGEBYSCORE', keys[2], '-inf', now - 60000)
    if redis.call('ZCARD', keys[2]) >= per_minute then
      local oldest = redis.call('ZRANGE', keys[2], 0, 0, 'WITHSCORES')
      return {'rate', tonumber(oldest[2]) + 60000 - now}
    end
  end
  if redis.call('ZCARD', keys[3]) >= queue_max then return {'full', 0} end
  if mode ~= 'anonymous' then redis.call('SET', keys[1], rid, 'PX', patience) end
  if mode == 'learner' then
    redis.call('ZADD', keys[2], now, rid)
    redis.call('PEXPIRE', keys[2], 60000)
  end
  redis.call('ZADD', keys[3], now + patience, rid)
  redis.call('PEXPIRE', keys[3], patience)
  return {'ok', now}
end

-- The run is answered (or given up): its learner may send another, its queue place is free.
local function release(keys, args)
  if redis.call('GET', keys[1]) == args[1] then redis.call('DEL', keys[1]) end
  redis.call('ZREM', keys[2], args[1])
  return 1
end

-- {id, fields} of the stream's oldest entry never delivered, now delivered to `me`.
local function deliver(stream, group, me)
  local got = redis.call('XREADGROUP', 'GROUP', group, me, 'COUNT', 1, 'STREAMS', stream, '>')
  if got then return got[1][2][1] end
  return nil
end

-- One job from the inbox into the stream: its head always (the first line, within
-- head_max bytes), its request only when the whole job is within max_bytes.
local function intake(inbox, stream, max_bytes, head_max)
  local job = redis.call('LPOP', inbox)
  if not job then return false end
  local cut = string.find(string.sub(job, 1, head_max + 1), '\n', 1, true)
  local head = cut and string.sub(job, 1, cut - 1) or ''
  if cut and #job <= max_bytes then
    redis.call('XADD', stream, '*', 'head', head, 'size', #job,
               'request', string.sub(job, cut + 1))
  else
    redis.call('XADD', stream, '*', 'head', head, 'size', #job)
  end
  return true
end

local function take_from(inbox, stream, group, me, max_bytes, head_max)
  local entry = deliver(stream, group, me)
  if not entry and intake(inbox, stream, max_bytes, head_max) then
    entry = deliver(stream, group, me)
  end
  if entry then return {stream, entry[1], entry[2]} end
  return nil
end

-- A host with a free slot takes the oldest learner's job; a deck's trial only when it has
-- room for one (args[5]) and the pool's trials in hand are fewer than args[6].
-- keys: inbox, trials' inbox, stream, trials' stream. Replies {stream, id, fields} or nil.
local function take(keys, args)
  local group, me = args[1], args[2]
  local max_bytes, head_max = tonumber(args[3]), tonumber(args[4])
  local found = take_from(keys[1], keys[3], group, me, max_bytes, head_max)
  if found or args[5] ~= '1' then return found end
  if tonumber(redis.call('XPENDING', keys[4], group)[1]) >= tonumber(args[6]) then
    return nil
  end
  return take_from(keys[2], keys[4], group, me, max_bytes, head_max)
end

-- Take over one job: any idle past args[3] ms (args[5] empty), or the oldest of the host
-- args[5] idle that long. Its delivery is counted first; a job delivered more than args[4]
-- times comes without its request. Replies {id, deliveries, fields} or nil.
local function claim(keys, args)
  local stream, group, me, idle = keys[1], args[1], args[2], tonumber(args[3])
  local most, holder, id = tonumber(args[4]), args[5], nil
  if holder == '' then
    id = redis.call('XAUTOCLAIM', stream, group, me, idle, '0-0', 'COUNT', 1, 'JUSTID')[2][1]
  else
    local pending = redis.call('XPENDING', stream, group, 'IDLE', idle, '-', '+', 1, holder)
    if pending[1] then id = pending[1][1] end
  end
  if not id then return nil end
  local times = redis.call('XPENDING', stream, group, id, id, 1)[1][4] + 1
  redis.call('XCLAIM', stream, group, me, 0, id, 'RETRYCOUNT', times, 'JUSTID')
  local entry = redis.call('XRANGE', stream, id, id)[1]
  if not entry then  -- deleted while its host was silent: nothing to run
    redis.call('XACK', stream, group, id)
    return nil
  end
  local fields = {}
  for i = 1, #entry[2], 2 do
    if entry[2][i] ~= 'request' or times <= most then
      table.insert(fields, entry[2][i])
      table.insert(fields, entry[2][i + 1])
    end
  end
  return {id, times, fields}
end

-- A host still working on its jobs keeps them: each one still its own counts as fresh.
-- Replies the ids it no longer holds (taken over meanwhile).
local function renew(keys, args)
  local stream, group, me, lost = keys[1], args[1], args[2], {}
  for i = 3, #args do
    if redis.call('XPENDING', stream, group, args[i], args[i], 1, me)[1] then
      redis.call('XCLAIM', stream, group, me, 0, args[i], 'JUSTID')
    else
      table.insert(lost, args[i])
    end
  end
  return lost
end

redis.register_function('admit_@V@', admit)
redis.register_function('release_@V@', release)
redis.register_function('take_@V@', take)
redis.register_function('claim_@V@', claim)
redis.register_function('renew_@V@', renew)
"""

VERSION = hashlib.sha256(_SOURCE.encode()).hexdigest()[:12]
LIBRARY = f"tutor_sandbox_{VERSION}"
SOURCE = f"#!lua name={LIBRARY}\n" + _SOURCE.replace("@V@", VERSION)


def name(function: str) -> str:
    return f"{function}_{VERSION}"


def missing(exc: BaseException) -> bool:
    """Whether Redis has not got this release's functions (a new or emptied Redis: a host
    loads them when it joins)."""
    return isinstance(exc, ResponseError) and "function not found" in str(exc).lower()


async def load(redis) -> bool:
    """Load this release's library (the hosts' user); False when it was there already."""
    try:
        await redis.execute_command("FUNCTION", "LOAD", SOURCE)
    except ResponseError as exc:
        if "already exists" not in str(exc):
            raise
        return False
    return True


async def call(redis, function: str, keys: list[str], args: list) -> object:
    return await redis.fcall(name(function), len(keys), *keys, *args)

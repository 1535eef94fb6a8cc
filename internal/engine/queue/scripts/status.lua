-- status.lua: where users stand. Takes many users per call, so the fixed
-- cost (clock, config, line length) is paid once for all of them. Its
-- writes: a waiting user who asks is heard from (abandonment,
-- tick_move.lua), and a held place that asks is back in the line at its
-- arrival number (docs/ARCHITECTURE.md, "Status near the head and far
-- back"). Needs Redis 6.2 or later (ZMSCORE).
--
-- KEYS[1..5]  waiting ZSET, entered ZSET, config HASH, tick HASH (the next tick), heard ZSET
-- KEYS[6..10] gone ZSET, draw SET, admitted HASH (renewed sliding sessions' starts, renew.lua),
--             gen HASH (moved places' generations, keep_current), held ZSET (set aside at the head)
-- KEYS[11..]  per call, three keys: the client's rate bucket, the place's, and the held places
--             its network brought back this interval (HASH at, n; "Held places come back ...")
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then the line's lane ("": general)
-- ARGV[DEFAULTS + 1..LIMITS] limits per client and per place: period_ms, burst
-- ARGV[LIMITS + 1] held places one network brings back per interval (0: no limit)
-- ARGV[LIMITS + 2..] per call, five values: user id, the calls to charge the client's and the
--             place's buckets (0: not asked; pass_limits), the generation of the caller's place
--             credential (-1: none; a stale one is answered NOT_WAITING, reason moved), and 1 if
--             its network is counted (else 0)
-- Returns the head (HEAD_*, common.lua), a status and a place per call, then an arrival number
-- per call, as enter.lua. The place is the position when WAITING (0 in a draw), the admission
-- (ms) when ENTERED (a pass names it), why the place ended when NOT_WAITING (REASONS,
-- common_places.lua; 0: not known), the wait (ms) when LIMITED (over a rate limit, answered
-- without looking). The arrival number is the place's score in the line when WAITING there,
-- else 0: the caller's credential may carry an older place's, and a page far back uses it;
-- negative for a place a draw placed (its place in the draw, less 2^52 + 1: reply.go).
local now = now_ms()
local cfg = queue_config(KEYS[3])
-- refill: what an interval admits from this line (the effective refill
-- while adapting, its lane's part with lanes), for the ETA
local refill = line_rate(KEYS[4], cfg.budget)
local in_draw = redis.call('SCARD', KEYS[7])
local out = reply_head(redis.call('ZCARD', KEYS[1]) + in_draw, KEYS[4], now, refill, cfg)

-- The rate limits, per call; users and slot are the calls let through
-- and their index among the calls (where their answer goes).
local FIXED = 10 -- KEYS before the per-call ones
local HELD_RETURN = tonumber(ARGV[LIMITS + 1])
local PER_CALL = LIMITS + 1 -- ARGV before the per-call ones
local HEAD = #out
local users, slot, gens, nets = {}, {}, {}, {}
for i = 1, (#ARGV - PER_CALL) / 5 do
  local a = PER_CALL + 5 * (i - 1)
  if pass_limits(i, a, KEYS[FIXED + 3 * i - 2], KEYS[FIXED + 3 * i - 1], now, out, HEAD) then
    users[#users + 1] = ARGV[a + 1]
    slot[#users] = i
    gens[#users] = tonumber(ARGV[a + 4])
    if ARGV[a + 5] == '1' then
      nets[i] = KEYS[FIXED + 3 * i]
    end
  end
end
users, slot = keep_current(KEYS[9], users, slot, gens, out, HEAD)

-- finish appends each call's arrival number (0: none) to the reply.
local CALLS = (#ARGV - PER_CALL) / 5
local seqs = {}
local function finish()
  for i = 1, CALLS do
    out[HEAD + 2 * CALLS + i] = seqs[i] or 0
  end
  return out
end
if #users == 0 then
  return finish()
end

-- One ZMSCORE answers "admitted?" for every user of the call.
local admitted = redis.call('ZMSCORE', KEYS[2], unpack(users))
local drawing = {}
if in_draw > 0 then
  drawing = redis.call('SMISMEMBER', KEYS[7], unpack(users))
end

-- Held places come back a few at a time. One network (net: its counter
-- for this call, nil when not counted) brings back at most HELD_RETURN
-- held places per interval (the interval is named by the at_ms of the
-- tick that opened it): one address asking for many parked places at
-- once would otherwise put them all at the head, each pushing back
-- everyone who polled all along. A place asking beyond that stays held,
-- its deadline to confirm renewed (it was heard), and is answered where
-- it would stand; it comes back on a later ask, at its own arrival
-- number. Returns true when user may come back now (and counts it).
local interval_tick = nil
local function may_return(net)
  if HELD_RETURN <= 0 or not net then
    return true
  end
  interval_tick = interval_tick or (redis.call('HGET', KEYS[4], 'at_ms') or '0')
  local c = redis.call('HMGET', net, 'at', 'n')
  local n = c[1] == interval_tick and tonumber(c[2]) or 0
  if n >= HELD_RETURN then
    return false
  end
  redis.call('HSET', net, 'at', interval_tick, 'n', n + 1)
  redis.call('PEXPIRE', net, 2 * cfg.refill_interval_ms)
  return true
end

-- confirm puts user, held aside at the head (tick.lua), back in the line
-- at its arrival number, ahead of all who arrived after it: the next tick
-- admits it (late, not lost), unless its network brought back its share
-- this interval (may_return). Returns its rank and whether it is back, or
-- nil when not held. The held ZSET is read only when it has members (one
-- ZCARD per call).
local held_n = nil
local function confirm(user, net)
  held_n = held_n or redis.call('ZCARD', KEYS[10])
  if held_n == 0 then
    return nil
  end
  local seq = redis.call('ZSCORE', KEYS[10], user)
  if not seq then
    return nil
  end
  if not may_return(net) then
    if cfg.abandon_after_ms > 0 then
      redis.call('ZADD', KEYS[5], -(now + cfg.abandon_after_ms), user) -- heard: a new deadline
    end
    return redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. seq), false
  end
  redis.call('ZREM', KEYS[10], user)
  redis.call('ZADD', KEYS[1], seq, user)
  out[HEAD_WAITING] = out[HEAD_WAITING] + 1
  return redis.call('ZRANK', KEYS[1], user), true
end

local heard, renewed = {}, {}
for i, user in ipairs(users) do
  local at = HEAD + 2 * slot[i] -- the index of this call's place
  -- An admission older than the session TTL no longer counts, even before
  -- the tick has purged it. (Its score is when it began, or for a sliding
  -- session its last renewal: the start is then read below.)
  local admitted_at = tonumber(admitted[i])
  if admitted_at and admitted_at > now - cfg.session_ttl_ms then
    out[at - 1] = ENTERED
    out[at] = admitted_at
    renewed[#renewed + 1] = at
    renewed[#renewed + 1] = user
  else
    local rank, back = redis.call('ZRANK', KEYS[1], user), true
    if not rank then
      rank, back = confirm(user, nets[slot[i]])
    end
    if rank or drawing[i] == 1 then
      out[at - 1] = WAITING
      out[at] = rank and rank + 1 or 0 -- 0: in the draw, no place yet
      if rank then
        -- A drawn place's score is below 1: no arrival number, but a
        -- negative score is its place in the draw (DRAW_BASE + place - 1,
        -- tick_close.lua), which Go reads from it.
        local seq = tonumber(redis.call('ZSCORE', KEYS[back == false and 10 or 1], user))
        seqs[slot[i]] = (seq >= 1 or seq < 0) and seq or 0
      end
      if back ~= false then -- a place still held keeps its mark (confirm)
        heard[#heard + 1] = now
        heard[#heard + 1] = user
      end
    elseif admitted_at then
      out[at - 1] = NOT_WAITING
      out[at] = 3 -- expired, not purged yet
    else
      out[at - 1] = NOT_WAITING
      out[at] = gone_reason(KEYS[6], user)
    end
  end
end
if #heard > 0 then
  redis.call('ZADD', KEYS[5], unpack(heard))
end
-- A renewed sliding session's start is kept apart from its score; one
-- HMGET for the call's admitted users, none when nobody asking is admitted.
if #renewed > 0 then
  local fields = {}
  for j = 2, #renewed, 2 do
    fields[#fields + 1] = renewed[j]
  end
  local starts = redis.call('HMGET', KEYS[8], unpack(fields))
  for j = 1, #fields do
    local start = tonumber(starts[j])
    if start then
      out[renewed[2 * j - 1]] = start
    end
  end
end
return finish()

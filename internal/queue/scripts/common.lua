-- common.lua: helpers prepended to every script of this folder (see scripts.go).
-- Each script reads the clock and the queue's config from Redis itself, so
-- every replica agrees on time and settings whatever its own clock says.

-- now_ms: Redis server time in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- queue_config: refill_size, refill_interval_ms, session_ttl_ms, max_active
-- (0: no cap), paused (0 or 1), abandon_after_ms (0: off), a scheduled
-- opening's opens_at_ms and prequeue_from_ms (0: none), max_waiting (the
-- line's cap, 0: none) and challenge_difficulty (proof of work before
-- entering, 0: off) from the config HASH, falling back to the calling
-- replica's defaults (ARGV[1..5] of every script that calls it) for any
-- field that is missing (a fresh or flushed Redis).
local function queue_config(key)
  local v = redis.call('HMGET', key, 'refill_size', 'refill_interval_ms', 'session_ttl_ms', 'max_active', 'paused',
    'abandon_after_ms', 'opens_at_ms', 'prequeue_from_ms', 'max_waiting', 'challenge_difficulty')
  return tonumber(v[1]) or tonumber(ARGV[1]),
         tonumber(v[2]) or tonumber(ARGV[2]),
         tonumber(v[3]) or tonumber(ARGV[3]),
         tonumber(v[4]) or tonumber(ARGV[4]),
         tonumber(v[5]) or 0,
         tonumber(v[6]) or tonumber(ARGV[5]),
         tonumber(v[7]) or 0,
         tonumber(v[8]) or 0,
         tonumber(v[9]) or 0,
         tonumber(v[10]) or 0
end
local DEFAULTS = 5 -- ARGV[1..DEFAULTS] are the defaults queue_config reads

-- min_spacing_ms: the least time between two applied ticks, so a tick
-- applied late and the next one applied on time never let two refills in
-- at once.
local function min_spacing_ms(interval)
  return math.ceil(interval * 9 / 10)
end

-- until_next_tick_ms: time until the next tick is applied: the start of the
-- next interval (ticks are aligned to multiples of the interval on the
-- Redis clock) but no sooner than min_spacing_ms after the last one (both
-- kept by tick.lua in the tick HASH); 0 when that tick is due and no
-- replica has applied it yet, which it does within a scheduler period. The
-- ETA is built from it in Go (Ticket.ETA).
local function until_next_tick_ms(tick_key, now)
  local t = redis.call('HMGET', tick_key, 'next_at_ms', 'min_next_ms')
  local due = math.max(tonumber(t[1]) or 0, tonumber(t[2]) or 0)
  return math.max(0, due - now)
end

-- reply_head: the values that open enter.lua's and status.lua's replies,
-- read by runBatch (batch.go) in this order:
-- {waiting, until_next_tick_ms, interval_ms, refill_size, ttl_ms, paused,
--  opens_at_ms, prequeue_from_ms, abandon_after_ms, until_open_ms}
-- where until_open_ms is the time until a scheduled opening (0: none
-- ahead).
local function reply_head(waiting, tick_key, now, refill, interval, ttl, paused, abandon_after, opens_at, prequeue_from)
  return {waiting, until_next_tick_ms(tick_key, now), interval, refill, ttl, paused,
    opens_at, prequeue_from, abandon_after, math.max(0, opens_at - now)}
end

-- active_count: admissions that have not ended, even if not purged yet.
local function active_count(entered_key, now, ttl)
  return redis.call('ZCOUNT', entered_key, string.format('(%d', now - ttl), '+inf')
end

-- Status codes shared with store.go. NOT_OPEN: a scheduled opening's
-- pre-queue window has not begun, so nobody can join yet. The others
-- refuse one call and change nothing for its user: LIMITED, the caller
-- went over a rate limit; FULL, the line is at its cap (max_waiting);
-- CHALLENGE, the queue asks for proof of work and the call brought none
-- that is valid (or brought one already used).
local ENTERED, WAITING, NOT_WAITING, NOT_OPEN = 1, 2, 3, 4
local LIMITED, FULL, CHALLENGE = 5, 6, 7

-- Rate limits (enter.lua and status.lua): ARGV[DEFAULTS + 1 .. LIMITS] are
-- the replica's limits per client address and per place, each the time
-- one request earns back (ms, fractional; 0: no limit) and the burst.
local LIMITS = DEFAULTS + 4

-- rate_take is one generic cell rate algorithm (GCRA) check of the bucket
-- at key for cost calls: it holds the time (ms) at which the bucket is full
-- again, and expires then, so an idle client costs no memory. Up to burst
-- calls pass at once, then one per period. Returns the new value to store
-- when the calls pass (commit it with rate_commit), or nil and the wait
-- (ms).
local function rate_take(key, now, period, burst, cost)
  if period <= 0 then
    return nil, 0
  end
  local full_at = math.max(tonumber(redis.call('GET', key)) or now, now) + period * cost
  local wait = full_at - now - period * burst
  if wait > 0 then
    return nil, wait
  end
  return full_at, 0
end

local function rate_commit(key, full_at, now)
  if full_at then
    redis.call('SET', key, full_at, 'PX', math.max(1, math.ceil(full_at - now)))
  end
end

-- pass_limits applies the rate limits to call i of enter.lua or
-- status.lua, whose ARGV from a + 1 are its user, then the costs to
-- charge its client's and its place's buckets (0: not asked; the
-- replica's local stage has let the call through, see local.go), with
-- its two buckets' keys. A call over either limit is answered LIMITED
-- with the wait (in out, after head) and false returned; one within both
-- is charged to both.
local function pass_limits(i, a, client_key, place_key, now, out, head)
  local client_at, client_wait, place_at, place_wait = nil, 0, nil, 0
  local client_cost, place_cost = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  if client_cost > 0 then
    client_at, client_wait = rate_take(client_key, now, tonumber(ARGV[DEFAULTS + 1]), tonumber(ARGV[DEFAULTS + 2]), client_cost)
  end
  if place_cost > 0 then
    place_at, place_wait = rate_take(place_key, now, tonumber(ARGV[DEFAULTS + 3]), tonumber(ARGV[DEFAULTS + 4]), place_cost)
  end
  if client_wait > 0 or place_wait > 0 then
    out[head + 2 * i - 1] = LIMITED
    out[head + 2 * i] = math.ceil(math.max(client_wait, place_wait))
    return false
  end
  rate_commit(client_key, client_at, now)
  rate_commit(place_key, place_at, now)
  return true
end

-- until_room_ms estimates when a line of waiting people, over its cap,
-- has room again: the ticks it takes to admit the excess (at least a
-- second, so nobody is told to come back at once).
local function until_room_ms(waiting, max_waiting, refill, interval, until_next)
  local ticks = math.ceil((waiting - max_waiting + 1) / math.max(refill, 1))
  return math.max(1000, until_next + math.max(ticks - 1, 0) * interval)
end

-- draw_key is a participant's place in a scheduled opening's draw: the
-- first 52 bits of SHA-1(seed ":" user), less 2^52, so every drawn place
-- is ahead of every arrival number (which are positive). Ordering by
-- independent uniform keys is a uniformly random order, and anyone with
-- the recorded seed and the participants can recompute it.
local function draw_key(seed, user)
  return tonumber(string.sub(redis.sha1hex(seed .. ':' .. user), 1, 13), 16) - 4503599627370496
end

-- Why a user holds no place any more, kept for an hour in the gone ZSET as
-- members "<reason>:<user>" (score: when), so a user who comes back is told.
-- The codes are shared with store.go; the names go into the members.
local REASONS = {'abandoned', 'left', 'expired', 'removed', 'done'}
local GONE_KEEP_MS = 3600000

-- mark_gone records reason (a name from REASONS) for users.
local function mark_gone(gone_key, reason, users, now)
  local args = {}
  for i, u in ipairs(users) do
    args[2 * i - 1] = now
    args[2 * i] = reason .. ':' .. u
    if #args >= 1000 then
      redis.call('ZADD', gone_key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then
    redis.call('ZADD', gone_key, unpack(args))
  end
end

-- gone_reason is the code (index in REASONS) of the latest reason recorded
-- for user, or 0.
local function gone_reason(gone_key, user)
  local members = {}
  for i, r in ipairs(REASONS) do
    members[i] = r .. ':' .. user
  end
  local at = redis.call('ZMSCORE', gone_key, unpack(members))
  local code, latest = 0, nil
  for i = 1, #REASONS do
    local t = tonumber(at[i])
    if t and (not latest or t > latest) then
      code, latest = i, t
    end
  end
  return code
end

-- common.lua: helpers prepended to every script of this folder (see scripts.go).
-- Each script reads the clock and the queue's config from Redis itself, so
-- every replica agrees on time and settings whatever its own clock says.

-- What the replies hold, named. reply.go mirrors every list below in the
-- same order (status*, head*, info*, tick*), and TestRepliesMatchLua fails
-- when the two disagree: keep one name per line, "local NAME = number".

-- Status codes of a call's answer. ALLOWED: challenge.lua let the call
-- through. NOT_OPEN: a scheduled opening's pre-queue window has not
-- begun, so nobody can join yet. The last five refuse one call and
-- change nothing for its user: LIMITED, the caller went over a rate
-- limit; FULL, the line is at its cap (max_waiting); CHALLENGE, the queue
-- asks for proof of work and the call brought none that is valid (or
-- brought one already used); HUMAN, the queue asks for a human check
-- (networks.lua, price_need); OTHER_LINE, an account's enter
-- (enter.lua, other_line) while the account holds a place in another of
-- the queue's lines; its place is the index of that line among those
-- the call named, or 0 when a lane the call did not name may hold
-- places (the caller read the lanes before a change: read, call again).
local ALLOWED = 0
local ENTERED = 1
local WAITING = 2
local NOT_WAITING = 3
local NOT_OPEN = 4
local LIMITED = 5
local FULL = 6
local CHALLENGE = 7
local HUMAN = 8
local OTHER_LINE = 9

-- The head of enter.lua's and status.lua's replies (reply_head), before
-- a status and a place per call. Times and durations in ms.
local HEAD_WAITING = 1          -- people in the line, a draw's participants included
local HEAD_UNTIL_NEXT_TICK = 2  -- until_next_tick_ms
local HEAD_INTERVAL = 3         -- refill_interval_ms
local HEAD_REFILL_SIZE = 4
local HEAD_TTL = 5              -- session_ttl_ms
local HEAD_PAUSED = 6           -- 0 or 1
local HEAD_OPENS_AT = 7         -- a scheduled opening (0: none)
local HEAD_PREQUEUE_FROM = 8    -- its pre-queue window's start (0: none)
local HEAD_ABANDON_AFTER = 9    -- abandon_after_ms (0: off)
local HEAD_UNTIL_OPEN = 10      -- until a scheduled opening (0: none ahead)

-- info.lua's reply.
local INFO_WAITING = 1          -- a draw's participants not yet placed included
local INFO_ENTERED = 2          -- admissions that have not ended (the active users)
local INFO_TOKENS = 3
local INFO_REFILL_SIZE = 4
local INFO_INTERVAL = 5
local INFO_TTL = 6
local INFO_LAST_TICK_AT = 7     -- 0: no tick applied yet
local INFO_NOW = 8              -- the Redis clock
local INFO_MAX_ACTIVE = 9
local INFO_PAUSED = 10
local INFO_ABANDON_AFTER = 11
local INFO_ABANDONED = 12       -- places the last tick dropped as abandoned
local INFO_OPENS_AT = 13
local INFO_PREQUEUE_FROM = 14
local INFO_DRAW_FOR = 15        -- the opening the last draw was for
local INFO_DRAW_SEED = 16       -- its seed
local INFO_DRAW_COUNT = 17      -- the participants it placed
local INFO_ADMITTED = 18        -- admitted so far in the interval in progress
local INFO_MAX_WAITING = 19
local INFO_DIFFICULTY = 20      -- challenge_difficulty
local INFO_BUDGET = 21          -- the refill an interval admits now: refill_effective while adapting, else refill_size

-- tick.lua's reply.
local TICK_APPLIED = 1          -- 0 or 1; -1: the lanes changed since the caller read them, call again
local TICK_MOVED = 2
local TICK_WAITING = 3
local TICK_TOKENS = 4
local TICK_PURGED = 5
local TICK_ADMITTED = 6         -- in the interval that just ended
local TICK_ABANDONED = 7
local TICK_LATE = 8             -- ms after it was due
local TICK_UNTIL_NEXT = 9       -- ms until the next tick is due (0: now, or once a draw is placed)
local TICK_BUDGET = 10          -- the refill the interval this tick opened admits (refill_effective while adapting)
local TICK_ADAPTED = 11         -- 1: the proposed refill_effective was stored (adapt)
local TICK_WINDOW = 12          -- what the call did to the schedule's windows: 0 nothing, 1 started one, 2 ended one, 3 both
local TICK_WINDOW_AT = 13       -- the start (ms) of the window started (or, alone, ended)
local TICK_WINDOW_CHANGES = 14  -- the fields they changed, JSON {"ended", "started": [{field, old, new}]}, "" for none
local TICK_LANES = 15           -- the lanes whose counts follow

-- What the line felt like: the kinds of the durations tick.lua
-- measures, each reported as a group {kind, value_ms, count} after the
-- TICK_* values and kept for the back office in the samples LIST (see
-- tick.lua, "Line statistics").
local STAT_LINE = 1             -- time in line: entry to admission (0 for a direct admission)
local STAT_ETA = 2              -- the ETA's error: actual admission less the one predicted at entry
local STAT_INSIDE = 3           -- time inside: admission to done or expiry

-- now_ms: Redis server time in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- interval_budget: what an interval admits. refill_size, unless the controller is
-- on and has stored an effective refill: then that, clamped to
-- [min_refill_size, refill_size] (a floor above refill_size gives way,
-- and never below 1), so an operator's lower refill_size counts at once.
-- internal/autorate's Clamp is the same rule.
local function interval_budget(refill, enabled, effective, floor)
  if not enabled or not effective then
    return refill
  end
  return math.max(math.max(1, math.min(floor, refill)), math.min(effective, refill))
end

-- queue_config: the queue's settings, one table by config HASH field
-- (cfg.refill_size, cfg.paused, ...): the settings of queue.Catalog the
-- scripts read, in one HMGET (config_read and config_of, written before
-- this file from the catalog), each a number unless its kind is text,
-- and each not stored (a fresh or flushed Redis, a setting never set)
-- the calling replica's default, ARGV[1..DEFAULTS - 1] of every script
-- that calls it, or its kind's zero. cfg.budget is what an interval
-- admits: refill_size, or while the origin's health drives the rate
-- (adapt_enabled) the effective refill tick.lua last stored beside the
-- settings (cfg.refill_effective), within [min_refill_size, refill_size]
-- (interval_budget).
local function queue_config(key)
  local cfg = config_of(config_read(key))
  cfg.budget = interval_budget(cfg.refill_size, cfg.adapt_enabled == 1, cfg.refill_effective, cfg.min_refill_size)
  return cfg
end
-- ARGV[DEFAULTS] of those scripts is the lane of the line they work on
-- ("": the general lane), whose keys they were given.
local LANE = ARGV[DEFAULTS]

-- timing_read is this call's one read of the tick HASH's timing fields
-- and its line's rate, made by line_rate and reused by next_tick_at: a
-- script that reads both (status, enter, snapshot) pays one HMGET, as it
-- did before lanes. Only scripts that write none of them read through it.
local timing_read = nil

-- line_rate: what an interval admits from this script's line (LANE), for
-- its ETA: with lanes, the tick leaves each line's expected admissions per
-- interval in the tick HASH ("rate:<lane>", tick.lua "Lanes"); without,
-- refill (the budget).
local function line_rate(tick_key, refill)
  timing_read = {key = tick_key, v = redis.call('HMGET', tick_key, 'next_at_ms', 'min_next_ms', 'rate:' .. LANE)}
  return tonumber(timing_read.v[3]) or refill
end

-- next_tick_at: when the next tick may be applied (Redis clock, ms), or
-- nil before a queue's first tick. tick.lua keeps it in the tick HASH as
-- "next_at_ms": one full interval after the last applied tick, never
-- sooner, so that no window of k intervals admits more than k + 1
-- refills (tick.lua). "min_next_ms" is what the tick.lua of before issue
-- 20 wrote beside it (0.9 interval after its tick): a replica still
-- running that version during an upgrade is waited for as long as it
-- asked.
local function next_tick_at(tick_key)
  local t
  if timing_read and timing_read.key == tick_key then
    t = timing_read.v
  else
    t = redis.call('HMGET', tick_key, 'next_at_ms', 'min_next_ms')
  end
  local at, legacy = tonumber(t[1]), tonumber(t[2])
  if at and legacy then
    return math.max(at, legacy)
  end
  return at or legacy
end

-- until_next_tick_ms: time until the next tick is applied (next_tick_at);
-- 0 when that tick is due and no replica has applied it yet, which one
-- does at once (the scheduler calls the tick when it is due). The ETA is
-- built from it in Go (Ticket.ETA).
local function until_next_tick_ms(tick_key, now)
  return math.max(0, (next_tick_at(tick_key) or now) - now)
end

-- reply_head: the values that open enter.lua's and status.lua's replies,
-- in HEAD_* order (a constructor, so the table is sized once on the hot
-- path; TestRepliesMatchLua checks the order): refill is what an
-- interval admits from the line (line_rate), cfg queue_config's table.
local function reply_head(waiting, tick_key, now, refill, cfg)
  return {waiting, until_next_tick_ms(tick_key, now), cfg.refill_interval_ms, refill, cfg.session_ttl_ms, cfg.paused,
    cfg.opens_at_ms, cfg.prequeue_from_ms, cfg.abandon_after_ms, math.max(0, cfg.opens_at_ms - now)}
end

-- near_head: how many places from the head of the line a replica answers
-- exactly, through status.lua, rather than from its snapshot (snapshot.lua,
-- snapshot.go): the places the next ticks may admit, enough ticks ahead
-- that a page polling as told (at most every abandon_after / 2) is heard
-- from at least twice on the way to the head, and never fewer than ten
-- ticks (the poll policy's near zone). Only these places keep a "last
-- heard" record (enter.lua, status.lua); one reaching the head without one
-- is confirmed first (tick.lua). refill is what an interval admits from
-- the line, cfg queue_config's table.
local function near_head(refill, cfg)
  local ticks = math.max(10, math.ceil(2 * cfg.abandon_after_ms / cfg.refill_interval_ms) + 2)
  return refill * ticks
end

-- active_count: admissions that have not ended, even if not purged yet.
local function active_count(entered_key, now, ttl)
  return redis.call('ZCOUNT', entered_key, string.format('(%d', now - ttl), '+inf')
end

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

-- charge_limits applies the rate limits to call i of enter.lua or
-- status.lua: the costs to charge its client's and its place's buckets
-- (0: not asked; the replica's local stage has let the call through, see
-- local.go), with its two buckets' keys (read only for a cost above 0). A
-- call over either limit is answered LIMITED with the wait (in out, after
-- head) and false returned; one within both is charged to both.
local function charge_limits(i, client_cost, place_cost, client_key, place_key, now, out, head)
  local client_at, client_wait, place_at, place_wait = nil, 0, nil, 0
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

-- pass_limits is charge_limits for call i of status.lua, whose ARGV from
-- a + 1 are its user, then the costs to charge its client's and its
-- place's buckets.
local function pass_limits(i, a, client_key, place_key, now, out, head)
  return charge_limits(i, tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), client_key, place_key, now, out, head)
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

-- stat_round keeps two significant digits of a duration (ms), so that
-- durations measured one by one (done.lua) fall into few groups: a
-- percentile read from them is within 5 % of the exact one.
local function stat_round(ms)
  if ms > -100 and ms < 100 then
    return ms
  end
  local p = 10 ^ (math.floor(math.log10(math.abs(ms))) - 1)
  return math.floor(ms / p + 0.5) * p
end

-- Why a user holds no place any more, kept for an hour in the gone ZSET as
-- members "<reason>:<user>" (score: when), so a user who comes back is told.
-- The codes are shared with reply.go (reasons); the names go into the members.
local REASONS = {'abandoned', 'left', 'expired', 'removed', 'done', 'moved'}
local REASON_MOVED = 6 -- never recorded in gone: answered from the gen HASH (keep_current)
local GONE_KEEP_MS = 3600000

-- trim_below removes the members of the ZSET key scored up to max (a
-- ZREMRANGEBYSCORE bound: "(x" leaves x), at most limit of them, the
-- lowest first (the first ranks are the lowest scores), and returns how
-- many it removed. ZREMRANGEBYSCORE has no LIMIT: on a set the users'
-- traffic fills, one call could otherwise remove a burst of any size.
-- ZCOUNT is O(log N), so a call costs O(log N + limit).
local function trim_below(key, max, limit)
  local n = math.min(redis.call('ZCOUNT', key, '-inf', max), limit)
  if n > 0 then
    redis.call('ZREMRANGEBYRANK', key, 0, n - 1)
  end
  return n
end

-- mark_gone records reason (a name from REASONS) for users.
-- (args is indexed by its own length, not by i: it is emptied every 500
-- users, and a table filled from index 1001 has length 0.)
-- Each record written retires up to two older than GONE_KEEP_MS: however
-- fast leaves and dones feed the set, it never holds more than an hour's
-- records and what it held before, at a cost bounded by the call's own
-- writes; the tick retires the rest (tick.lua).
local function mark_gone(gone_key, reason, users, now)
  local args = {}
  for _, u in ipairs(users) do
    args[#args + 1] = now
    args[#args + 1] = reason .. ':' .. u
    if #args >= 1000 then
      redis.call('ZADD', gone_key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then
    redis.call('ZADD', gone_key, unpack(args))
  end
  if #users > 0 then
    trim_below(gone_key, now - GONE_KEEP_MS, 2 * #users)
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

-- keep_current drops from users (and slot, gens) the calls whose place
-- credential is of an older generation than their place: the place moved
-- to another device (move.lua, which internal/handoff calls, bumps the member's generation in
-- the gen HASH, member=user, value=generation, only for places that ever
-- moved). Those are answered NOT_WAITING with the reason "moved" and
-- change nothing. gens[j] is users[j]'s credential's generation (-1:
-- the caller holds no credential: nothing to check). One
-- EXISTS when no place of the queue ever moved, else one HMGET.
local function keep_current(gen_key, users, slot, gens, out, head)
  if #users == 0 or redis.call('EXISTS', gen_key) == 0 then
    return users, slot
  end
  local cur = redis.call('HMGET', gen_key, unpack(users))
  local kept, kept_slot = {}, {}
  for j, user in ipairs(users) do
    if gens[j] >= 0 and (tonumber(cur[j]) or 0) > gens[j] then
      out[head + 2 * slot[j] - 1] = NOT_WAITING
      out[head + 2 * slot[j]] = REASON_MOVED
    else
      kept[#kept + 1] = user
      kept_slot[#kept] = slot[j]
    end
  end
  return kept, kept_slot
end

-- Events for the site (webhooks). A queue whose config HASH
-- holds webhooks = 1 (queue.Store.SetOutbox, for the delivery workers, while
-- the queue has a webhook URL) keeps two outboxes, STREAMs of entries
-- {type, at (ms, Redis clock), subs (user ids, "\n"-joined: ids hold no
-- control character), settings (settings_changed: JSON)}, written here,
-- inside the script that causes the event, so an event is recorded if and
-- only if its change is (or counted as dropped). At most EVENTS_PER_ENTRY
-- users per entry (one delivery each). Without the flag an event costs
-- one HMGET, once per script call, and only in a call that has something
-- to tell: status, and enters that only queue, pay nothing.
--
-- emit writes the events outbox: admissions and their ends, the
-- operator's removals and settings, which the room's rate and the
-- operator bound. emit_bulk writes the bulk outbox: a user's own leaving,
-- which anyone can cause at will by entering and leaving (measured:
-- 280 cycles delayed a real admitted event by 14 s). The workers read the
-- events outbox first, so no bulk backlog holds an admission back.
-- An outbox at its cap (EVENTS_MAXLEN entries; the bulk one, the
-- workers' webhooks_bulk_max or EVENTS_BULK_MAXLEN) takes no more: the
-- new events are dropped and counted in the config HASH (webhooks_dropped_
-- fields, which the workers read into a metric and reset): the entries
-- kept stay deliverable, none is trimmed unread (MAXLEN ~ used to drop
-- the oldest past 100,000, uncounted).
local EVENTS_PER_ENTRY = 100
local EVENTS_MAXLEN = 100000
local EVENTS_BULK_MAXLEN = 10000
local events_flag, events_bulk_max = nil, nil -- this call's reading of the config

local function events_on(config_key)
  if events_flag == nil then
    local v = redis.call('HMGET', config_key, 'webhooks', 'webhooks_bulk_max')
    events_flag = v[1] == '1'
    events_bulk_max = tonumber(v[2]) or EVENTS_BULK_MAXLEN
  end
  return events_flag
end

-- append_events writes the events in entries of EVENTS_PER_ENTRY users
-- while the outbox holds fewer than maxlen entries, and counts the rest
-- (a settings event counts one) in the config's dropped_field.
-- settings and actor are a settings_changed event's (nil for the others;
-- actor "" when nobody is named).
local function append_events(events_key, config_key, maxlen, dropped_field, kind, subs, now, settings, actor)
  for i = 1, math.max(#subs, 1), EVENTS_PER_ENTRY do
    if redis.call('XLEN', events_key) >= maxlen then
      redis.call('HINCRBY', config_key, dropped_field, math.max(#subs - i + 1, 1))
      return
    end
    local fields = {'type', kind, 'at', now, 'subs', table.concat(subs, '\n', i, math.min(i + EVENTS_PER_ENTRY - 1, #subs))}
    if settings then
      fields[#fields + 1] = 'settings'
      fields[#fields + 1] = settings
    end
    if actor and actor ~= '' then
      fields[#fields + 1] = 'actor'
      fields[#fields + 1] = actor
    end
    redis.call('XADD', events_key, '*', unpack(fields))
  end
end

local function emit(events_key, config_key, kind, subs, now, settings, actor)
  if (#subs == 0 and not settings) or not events_on(config_key) then
    return
  end
  append_events(events_key, config_key, EVENTS_MAXLEN, 'webhooks_dropped_outbox_full', kind, subs, now, settings, actor)
end

local function emit_bulk(bulk_key, config_key, kind, subs, now)
  if #subs == 0 or not events_on(config_key) then
    return
  end
  append_events(bulk_key, config_key, events_bulk_max, 'webhooks_dropped_bulk_full', kind, subs, now)
end

-- Lanes removed. A lane the configured lanes drop keeps its people, who
-- keep their arrival order against everyone else by being served at the
-- share the lane had when it went, until its line is empty (tick.lua,
-- lines_now; docs/ARCHITECTURE.md, "Lanes"): the tick HASH remembers it
-- as "share:<lane>". lanes_replaced is called by every writer of the
-- config's "lanes" (settings.lua, tick.lua's windows) with the value
-- before and after: each lane dropped whose line may hold places (it is
-- in the lanes SET) is remembered at its old share, each lane configured
-- again is forgotten (its configured share counts again).
local function lanes_replaced(tick_key, lanes_key, old_raw, new_raw)
  local function shares(raw)
    local out = {}
    if raw and raw ~= '' then
      for _, l in ipairs(cjson.decode(raw)) do
        out[l.name] = l.share
      end
    end
    return out
  end
  local old, new = shares(old_raw), shares(new_raw)
  for name, share in pairs(old) do
    if new[name] == nil and redis.call('SISMEMBER', lanes_key, name) == 1 then
      redis.call('HSET', tick_key, 'share:' .. name, string.format('%.17g', share))
    end
  end
  for name in pairs(new) do
    redis.call('HDEL', tick_key, 'share:' .. name)
  end
end

-- Windows and people. While a window is in force (the tick HASH's
-- "window"), its memory ("window_saved", tick.lua) holds, per field it
-- set, the value before it and the value it wrote; its end restores a
-- field only if nobody has changed it since. person_changed is called by
-- a person's change (settings.lua, ARGV-style field, value, ... list from
-- first): each field it writes leaves the window's memory, so the window's
-- end leaves it as the person set it, even to the value the window wrote.
-- A pause a person sets while a window is in force is kept ("pause_kept")
-- until a person lifts it: no window's end or start lifts it.
local function person_changed(tick_key, fields, first)
  local window = redis.call('HGET', tick_key, 'window')
  local raw = redis.call('HGET', tick_key, 'window_saved')
  local memory = raw and cjson.decode(raw)
  for i = first, #fields, 2 do
    local f, v = fields[i], fields[i + 1]
    if memory then
      memory[f] = nil
    end
    if f == 'paused' and v == '0' then
      redis.call('HDEL', tick_key, 'pause_kept')
    elseif f == 'paused' and v == '1' and window then
      redis.call('HSET', tick_key, 'pause_kept', '1')
    end
  end
  if memory then
    redis.call('HSET', tick_key, 'window_saved', next(memory) == nil and '{}' or cjson.encode(memory))
  end
end

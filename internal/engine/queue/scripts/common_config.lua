-- common_config.lua: the Redis clock, the queue's config, when the next
-- tick is due and the head of enter's and status's replies (the ETA's
-- inputs). Part of the common prelude (common.lua, scripts.go).

-- now_ms: Redis server time in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- interval_budget: what an interval admits. refill_size, unless the controller is
-- on and has stored an effective refill: then that, clamped to
-- [min_refill_size, refill_size] (a floor above refill_size gives way,
-- and never below 1), so an operator's lower refill_size counts at once.
-- internal/ops/autorate's Clamp is the same rule.
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
local LANE

-- timing_read is this call's one read of the tick HASH's timing fields
-- and its line's rate, made by line_rate and reused by next_tick_at: a
-- script that reads both (status, enter, snapshot) pays one HMGET, as it
-- did before lanes. Only scripts that write none of them read through it.
local timing_read

-- common_config_begin sets this file's values for a call (scripts.go).
local function common_config_begin()
  LANE = ARGV[DEFAULTS]
  timing_read = nil
end

-- line_rate: what an interval admits from this script's line (LANE), for
-- its ETA: with lanes, the tick leaves each line's expected admissions per
-- interval in the tick HASH ("rate:<lane>", set_rates in tick_lines.lua); without,
-- refill (the budget).
local function line_rate(tick_key, refill)
  timing_read = {key = tick_key, v = redis.call('HMGET', tick_key, 'next_at_ms', 'min_next_ms', 'rate:' .. LANE)}
  return tonumber(timing_read.v[3]) or refill
end

-- next_tick_at: when the next tick may be applied (Redis clock, ms), or
-- nil before a queue's first tick. tick.lua keeps it in the tick HASH as
-- "next_at_ms": one full interval after the last applied tick, never
-- sooner, so that no window of k intervals admits more than k + 1
-- refills (docs/ARCHITECTURE.md, "Ticks are spaced"). "min_next_ms" is
-- what an older version of the tick wrote beside it (0.9 interval after
-- its tick): a replica still running that version during an upgrade is
-- waited for as long as it asked.
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
    cfg.opens_at_ms, cfg.prequeue_from_ms, cfg.abandon_after_ms, math.max(0, cfg.opens_at_ms - now), cfg.closed_at_ms or 0}
end

-- near_head: how many places from the head of the line a replica answers
-- exactly, through status.lua, rather than from its snapshot (snapshot.lua,
-- snapshot.go): the places the next ticks may admit, enough ticks ahead
-- that a page polling as told (at most every abandon_after / 2) is heard
-- from at least twice on the way to the head, and never fewer than ten
-- ticks (the poll policy's near zone). Only these places keep a "last
-- heard" record (enter.lua, status.lua); one reaching the head without one
-- is confirmed first (tick_move.lua). refill is what an interval admits from
-- the line, cfg queue_config's table.
local function near_head(refill, cfg)
  local ticks = math.max(10, math.ceil(2 * cfg.abandon_after_ms / cfg.refill_interval_ms) + 2)
  return refill * ticks
end

-- active_count: admissions that have not ended, even if not purged yet.
local function active_count(entered_key, now, ttl)
  return redis.call('ZCOUNT', entered_key, string.format('(%d', now - ttl), '+inf')
end

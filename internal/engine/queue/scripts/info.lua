-- info.lua: counts and settings of one queue for the API and back office.
-- Read-only.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> tokens  (STRING)
-- KEYS[4] -> config  (HASH)
-- KEYS[5] -> tick    (HASH)
-- KEYS[6] -> draw    (SET)
-- ARGV[1..DEFAULTS] -> the replica's defaults queue_config reads (common_config.lua), lane ("")
-- Returns, in INFO_* order (common.lua):
--         {waiting, entered, tokens, refill_size, interval_ms, ttl_ms,
--          last_tick_at_ms, now_ms, max_active, paused, abandon_after_ms,
--          abandoned by the last tick, opens_at_ms, prequeue_from_ms,
--          the opening its draw was for (ms), 1 while it is being placed (its
--          seed: read the tick HASH, draw.go), participants placed,
--          admitted so far in the interval in progress, max_waiting,
--          challenge_difficulty, the budget an interval admits now
--          (refill_effective while adapting, else refill_size)}
-- where waiting includes the participants of a draw not yet placed.
-- where entered counts the admissions that have not ended (the active users).
local now = now_ms()
local cfg = queue_config(KEYS[4])
local tokens = tonumber(redis.call('GET', KEYS[3])) or cfg.refill_size
if tokens > cfg.refill_size then
  tokens = cfg.refill_size
end
local entered = active_count(KEYS[2], now, cfg.session_ttl_ms)
local t = redis.call('HMGET', KEYS[5], 'at_ms', 'abandoned', 'draw_for', 'draw_placing', 'draw_count', 'moved', 'direct')
local out = {}
out[INFO_WAITING] = redis.call('ZCARD', KEYS[1]) + redis.call('SCARD', KEYS[6])
out[INFO_ENTERED] = entered
out[INFO_TOKENS] = tokens
out[INFO_REFILL_SIZE] = cfg.refill_size
out[INFO_INTERVAL] = cfg.refill_interval_ms
out[INFO_TTL] = cfg.session_ttl_ms
out[INFO_LAST_TICK_AT] = tonumber(t[1]) or 0
out[INFO_NOW] = now
out[INFO_MAX_ACTIVE] = cfg.max_active
out[INFO_PAUSED] = cfg.paused
out[INFO_ABANDON_AFTER] = cfg.abandon_after_ms
out[INFO_ABANDONED] = tonumber(t[2]) or 0
out[INFO_OPENS_AT] = cfg.opens_at_ms
out[INFO_PREQUEUE_FROM] = cfg.prequeue_from_ms
out[INFO_DRAW_FOR] = tonumber(t[3]) or 0
out[INFO_DRAW_PLACING] = tonumber(t[4]) or 0
out[INFO_DRAW_COUNT] = tonumber(t[5]) or 0
out[INFO_ADMITTED] = (tonumber(t[6]) or 0) + (tonumber(t[7]) or 0)
out[INFO_MAX_WAITING] = cfg.max_waiting
out[INFO_DIFFICULTY] = cfg.challenge_difficulty
out[INFO_BUDGET] = cfg.budget
out[INFO_CLOSED] = cfg.closed_at_ms or 0
return out

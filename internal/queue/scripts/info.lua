-- info.lua: counts and settings of one queue for the API and back office.
-- Read-only.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> tokens  (STRING)
-- KEYS[4] -> config  (HASH)
-- KEYS[5] -> tick    (HASH)
-- ARGV[1..4] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active
-- Returns {waiting, entered, tokens, refill_size, interval_ms, ttl_ms,
--          last_tick_at_ms, now_ms, max_active, paused}
-- where entered counts the admissions that have not ended (the active users).
local now = now_ms()
local refill, interval, ttl, max_active, paused = queue_config(KEYS[4])
local tokens = tonumber(redis.call('GET', KEYS[3])) or refill
if tokens > refill then
  tokens = refill
end
local entered = active_count(KEYS[2], now, ttl)
local last = tonumber(redis.call('HGET', KEYS[5], 'at_ms')) or 0
return {redis.call('ZCARD', KEYS[1]), entered, tokens, refill, interval, ttl, last, now, max_active, paused}

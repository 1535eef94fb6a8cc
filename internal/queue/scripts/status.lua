-- status.lua: where a user stands. Read-only.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> config  (HASH)
-- ARGV[1] -> user id
-- ARGV[2..4] -> default refill_size, refill_interval_ms, session_ttl_ms
-- Returns {status, position, waiting, eta_ms, until_next_tick_ms, interval_ms, refill_size}
local user = ARGV[1]
local now = now_ms()
local refill, interval, ttl = queue_config(KEYS[3], ARGV[2], ARGV[3], ARGV[4])
local next_tick = until_next_tick_ms(now, interval)
local waiting = redis.call('ZCARD', KEYS[1])

-- An admission older than the session TTL no longer counts, even before
-- the tick has purged it.
local admitted_at = tonumber(redis.call('ZSCORE', KEYS[2], user))
if admitted_at and admitted_at > now - ttl then
  return {ENTERED, 0, waiting, 0, next_tick, interval, refill}
end

local rank = redis.call('ZRANK', KEYS[1], user)
if not rank then
  return {NOT_WAITING, 0, waiting, 0, next_tick, interval, refill}
end
local position = rank + 1
return {WAITING, position, waiting, eta_ms(now, interval, refill, position), next_tick, interval, refill}

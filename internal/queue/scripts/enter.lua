-- enter.lua: put a user into the queue. The user is admitted at once only
-- while tokens remain and nobody is waiting (so a missing token key can
-- never let a newcomer jump the line); otherwise the user joins the tail
-- with the next arrival number from Redis. Re-entry always goes to the back:
-- an admission is given up, and a place in the line is replaced by the new
-- arrival number (ZADD updates the score of a member already there).
--
-- KEYS[1] -> waiting (ZSET member=user, score=arrival seq)
-- KEYS[2] -> entered (ZSET member=user, score=admission time ms)
-- KEYS[3] -> tokens  (STRING, unset means a full bucket)
-- KEYS[4] -> seq     (STRING arrival counter)
-- KEYS[5] -> config  (HASH)
-- KEYS[6] -> tick    (HASH; field "direct" counts admissions since the last tick)
-- ARGV[1] -> user id
-- ARGV[2..4] -> default refill_size, refill_interval_ms, session_ttl_ms
-- Returns {status, position, waiting, eta_ms, until_next_tick_ms, interval_ms, refill_size}
local user = ARGV[1]
local now = now_ms()
local refill, interval = queue_config(KEYS[5], ARGV[2], ARGV[3], ARGV[4])

redis.call('ZREM', KEYS[2], user)

local tokens = tonumber(redis.call('GET', KEYS[3])) or refill
if tokens > refill then
  tokens = refill -- refill_size was lowered since the last tick
end

local waiting = redis.call('ZCARD', KEYS[1])
local next_tick = until_next_tick_ms(now, interval)
if tokens > 0 and waiting == 0 then
  redis.call('ZADD', KEYS[2], now, user)
  redis.call('SET', KEYS[3], tokens - 1)
  redis.call('HINCRBY', KEYS[6], 'direct', 1)
  return {ENTERED, 0, 0, 0, next_tick, interval, refill}
end

local seq = redis.call('INCR', KEYS[4])
-- 1 for a newcomer, 0 for a user moved from their old place to the back.
local position = waiting + redis.call('ZADD', KEYS[1], seq, user)
return {WAITING, position, position, eta_ms(now, interval, refill, position), next_tick, interval, refill}

-- enter.lua: put users into the queue, one after the other in the order
-- given (the order in which they reached this replica). A user is admitted
-- at once only while tokens remain and nobody is waiting (so a missing token
-- key can never let a newcomer jump the line); otherwise the user joins the
-- tail with the next arrival number from Redis. Re-entry always goes to the
-- back: an admission is given up, and a place in the line is replaced by the
-- new arrival number (ZADD updates the score of a member already there).
-- Taking many users per call spreads the script's fixed cost (clock,
-- config, bucket) over all of them; each call is still atomic.
--
-- KEYS[1] -> waiting (ZSET member=user, score=arrival seq)
-- KEYS[2] -> entered (ZSET member=user, score=admission time ms)
-- KEYS[3] -> tokens  (STRING, unset means a full bucket)
-- KEYS[4] -> seq     (STRING arrival counter)
-- KEYS[5] -> config  (HASH)
-- KEYS[6] -> tick    (HASH; field "direct" counts admissions since the last tick)
-- ARGV[1..3] -> default refill_size, refill_interval_ms, session_ttl_ms
-- ARGV[4..]  -> user ids
-- Returns {waiting, until_next_tick_ms, interval_ms, refill_size,
--          status1, position1, status2, position2, ...}
-- where waiting is the line after the last user and position is 0 unless
-- the status is WAITING.
local now = now_ms()
local refill, interval = queue_config(KEYS[5], ARGV[1], ARGV[2], ARGV[3])

local tokens = tonumber(redis.call('GET', KEYS[3])) or refill
if tokens > refill then
  tokens = refill -- refill_size was lowered since the last tick
end
local tokens_before = tokens
local waiting = redis.call('ZCARD', KEYS[1])

local out = {0, until_next_tick_ms(now, interval), interval, refill}
for i = 4, #ARGV do
  local user = ARGV[i]
  redis.call('ZREM', KEYS[2], user)
  if tokens > 0 and waiting == 0 then
    redis.call('ZADD', KEYS[2], now, user)
    tokens = tokens - 1
    out[#out + 1] = ENTERED
    out[#out + 1] = 0
  else
    -- ZADD returns 1 for a newcomer, 0 for a user moved to the back; either
    -- way the user is now last.
    waiting = waiting + redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[4]), user)
    out[#out + 1] = WAITING
    out[#out + 1] = waiting
  end
end

if tokens < tokens_before then
  redis.call('SET', KEYS[3], tokens)
  redis.call('HINCRBY', KEYS[6], 'direct', tokens_before - tokens)
end
out[1] = waiting
return out

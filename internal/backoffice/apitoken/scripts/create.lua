-- create.lua: store a new API token, after sweeping the expired ones, if
-- fewer than the most allowed are live.
--
-- KEYS[1] -> tokens (HASH id -> JSON record)
-- KEYS[2] -> expiry (ZSET id, score expiry ms)
-- KEYS[3] -> used (HASH id -> last use ms)
-- ARGV[1] -> the token's id
-- ARGV[2] -> its record, JSON
-- ARGV[3] -> its expiry (ms, Redis clock)
-- ARGV[4] -> now (ms, Redis clock)
-- ARGV[5] -> the most live tokens
-- Returns 1 when stored, 0 when there are too many.

local function sweep(now)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
  for _, id in ipairs(gone) do
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[3], id)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
end

sweep(ARGV[4])
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1

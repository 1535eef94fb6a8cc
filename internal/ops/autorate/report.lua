-- report.lua: a queue's origin report (internal/ops/autorate, origin.go).
--
-- KEYS[1] -> the report (HASH p95_ms, error_rate, source, at_ms)
-- ARGV[1] -> "write" or "read"
-- write: ARGV[2] -> p95_ms, ARGV[3] -> error_rate (0..1, a decimal
--        string: Redis would truncate a Lua number), ARGV[4] -> source;
--        stamps at_ms with the Redis clock. Returns at_ms.
-- read:  returns {p95_ms, error_rate, at_ms, now_ms} as strings ("0" for
--        a field not there), now_ms the Redis clock, so every replica
--        judges a report's age by one clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] == 'write' then
  redis.call('HSET', KEYS[1], 'p95_ms', ARGV[2], 'error_rate', ARGV[3], 'source', ARGV[4], 'at_ms', now)
  redis.call('PEXPIRE', KEYS[1], 60000)
  return now
end
local v = redis.call('HMGET', KEYS[1], 'p95_ms', 'error_rate', 'at_ms')
return {v[1] or '0', v[2] or '0', v[3] or '0', tostring(now)}

-- list.lua: every live token's record and last use, after sweeping the
-- expired ones.
--
-- KEYS[1] -> tokens (HASH), KEYS[2] -> expiry (ZSET), KEYS[3] -> used (HASH)
-- Returns {record, last use ms or "", record, last use, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[3], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  out[#out + 1] = all[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[3], all[i]) or ''
end
return out

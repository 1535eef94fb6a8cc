-- lookup.lua: a token's record, if it is live, and its last use noted
-- when the presented secret is its own.
--
-- KEYS[1] -> tokens (HASH id -> JSON record)
-- KEYS[2] -> expiry (ZSET id, score expiry ms)
-- KEYS[3] -> used (HASH id -> last use ms)
-- ARGV[1] -> the token's id
-- ARGV[2] -> the presented secret's keyed hash (base64, as the record holds it)
-- Returns {record or "", now ms, ms until it expires}; "" when there is no
-- such live token.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HGET', KEYS[1], ARGV[1])
local exp = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if not rec or not exp or exp <= now then
  return {'', now, 0}
end
-- The hash is compared here only to keep the last use honest; the caller
-- judges the secret (lockout) and never trusts this.
if string.find(rec, '"hash":"' .. ARGV[2] .. '"', 1, true) then
  redis.call('HSET', KEYS[3], ARGV[1], now)
end
return {rec, now, exp - now}

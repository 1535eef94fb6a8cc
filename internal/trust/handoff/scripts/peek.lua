-- peek.lua: whether a token is member's live hand-over (for its QR code).
--
-- KEYS[1] -> live (HASH: the live hand-overs, common.lua)
-- ARGV[1] -> the token's field ("t:" .. sha256 hex)
-- ARGV[2] -> member
-- Returns when it expires (ms), or 0.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 0
end
local f = split(v)
local expires = tonumber(f[3])
if f[1] ~= ARGV[2] or expires <= now_ms() then
  return 0
end
return expires

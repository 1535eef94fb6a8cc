-- touch.lua: a session in use: its record, and its idle timeout renewed,
-- never past its absolute end.
--
-- KEYS[1] -> the session (HASH rec, person, abs_ms)
-- ARGV[1] -> idle timeout (ms)
-- Returns {record, ms until it ends if idle from now} or {"", 0} when
-- there is no such live session.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'rec', 'abs_ms')
local abs = tonumber(h[2])
if not h[1] or not abs or abs <= now then
  redis.call('DEL', KEYS[1])
  return {'', 0}
end
local left = math.min(tonumber(ARGV[1]), abs - now)
redis.call('PEXPIRE', KEYS[1], left)
return {h[1], left}

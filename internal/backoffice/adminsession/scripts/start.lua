-- start.lua: a person's new sign-in to the back office.
--
-- KEYS[1] -> the session (HASH rec, person, abs_ms)
-- KEYS[2] -> the person's sessions (SET of session ids)
-- ARGV[1] -> the session's id
-- ARGV[2] -> its record, JSON (name, grants)
-- ARGV[3] -> the person's name
-- ARGV[4] -> idle timeout (ms)
-- ARGV[5] -> absolute lifetime (ms)
-- Returns the absolute end (ms, Redis clock).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local abs = now + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'person', ARGV[3], 'abs_ms', abs)
redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[4]), tonumber(ARGV[5])))
redis.call('SADD', KEYS[2], ARGV[1])
-- The set outlives each of its sessions: it goes with the last.
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[5]))
end
return abs

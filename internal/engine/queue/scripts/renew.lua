-- renew.lua: a pass check with sliding sessions (Settings.SessionMax): if
-- the admission that began at ARGV[DEFAULTS + 2] is still the user's
-- current one, it now ends session_ttl from now, but never later than
-- session_max after it began. The entered set's score then moves from
-- the admission's start to its last renewal (what expiry, the cap and the
-- purge read), and the start is kept in the admitted HASH (what a pass
-- names; status.lua and done.lua read it there).
--
-- KEYS[1] -> entered  (ZSET member=user, score=start or last renewal, ms)
-- KEYS[2] -> config   (HASH)
-- KEYS[3] -> admitted (HASH member=user, value=start ms, once renewed)
-- ARGV[1..DEFAULTS] -> the replica's defaults queue_config reads (common_config.lua), lane ("")
-- ARGV[DEFAULTS + 1] -> user id
-- ARGV[DEFAULTS + 2] -> the admission's start (ms), from the pass
-- ARGV[DEFAULTS + 3] -> session_max_ms
-- Returns 2 when that admission is current and now ends later, 1 when it
-- is current but already ends as late as it may, else 0.
local now = now_ms()
local ttl = queue_config(KEYS[2]).session_ttl_ms
local user = ARGV[DEFAULTS + 1]
local basis = tonumber(redis.call('ZSCORE', KEYS[1], user))
if not basis or basis <= now - ttl then
  return 0
end
local start = tonumber(redis.call('HGET', KEYS[3], user)) or basis
if start ~= tonumber(ARGV[DEFAULTS + 2]) then
  return 0
end
local renewed = math.min(now, start + tonumber(ARGV[DEFAULTS + 3]) - ttl)
if renewed > basis then
  redis.call('ZADD', KEYS[1], 'XX', renewed, user)
  redis.call('HSET', KEYS[3], user, start)
  return 2
end
return 1

-- create.lua: a hand-over of member's place, replacing the member's
-- earlier one if it is still live.
--
-- KEYS[1] -> live    (HASH: the live hand-overs, common.lua)
-- KEYS[2] -> expires (ZSET member=user, score=when its hand-over expires)
-- KEYS[3] -> gen     (HASH member=user, value=generation: rediskeys.Gen)
-- KEYS[4] -> waiting (ZSET: the queue's line)
-- KEYS[5] -> draw    (SET: a scheduled opening's participants)
-- ARGV[1] -> member (user id)
-- ARGV[2] -> the generation of the caller's place credential
-- ARGV[3] -> the token's field ("t:" .. sha256 hex)
-- ARGV[4] -> the code's field ("c:" .. sha256 hex)
-- ARGV[5] -> how long the hand-over lives (ms)
-- Returns {1, expires_ms}, or {code}: -1 the credential is stale (the
-- place moved already), -2 the member is not waiting (only a place in
-- line, or in a draw, moves), -3 the code is taken by another live
-- hand-over (the caller draws another).
local member, gen = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
sweep(KEYS[1], KEYS[2], now)
if current(KEYS[3], member) > gen then
  return {-1}
end
if not redis.call('ZSCORE', KEYS[4], member) and redis.call('SISMEMBER', KEYS[5], member) == 0 then
  return {-2}
end
drop(KEYS[1], KEYS[2], member)
if redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 then
  return {-3}
end
local expires = now + tonumber(ARGV[5])
local v = member .. '\n' .. gen .. '\n' .. expires
redis.call('HSET', KEYS[1], ARGV[3], v, ARGV[4], v, 'm:' .. member, ARGV[3] .. '\n' .. ARGV[4])
redis.call('ZADD', KEYS[2], expires, member)
return {1, expires}

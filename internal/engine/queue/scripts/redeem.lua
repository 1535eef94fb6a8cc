-- redeem.lua: an invitation code moves a place into the code's lane and
-- spends one of the code's uses, in one step: a wrong, spent, expired or
-- revoked code changes nothing, and of any redeemers of a code's last use
-- exactly one moves. The place keeps its arrival number (its score in the
-- line, the held set or the draw) under its new member id, the lane's
-- ("l:<lane>:<sub>"); the lane's arrival counter is raised to it, so the
-- lane's next arrivals come behind it.
--
-- KEYS[1..3]   codes HASH (digest -> "<uses left> <batch> <lane>"), code batches HASH, gen HASH
-- KEYS[4..9]   the place's line now: waiting ZSET, held ZSET, draw SET, heard ZSET, stale ZSET, seq STRING
-- KEYS[10..14] the lane's line: waiting ZSET, held ZSET, draw SET, heard ZSET, seq STRING
-- KEYS[15]     lanes SET
-- ARGV[1] -> the code's digest
-- ARGV[2] -> the lane the caller read for it (the code's lane never changes)
-- ARGV[3] -> the place's member id now; ARGV[4] -> its member id in the lane
-- ARGV[5] -> the generation of the caller's place credential (-1: none)
-- Returns {REDEEM_MOVED, arrival number (0: in a draw)}, {REDEEM_INVALID},
-- {REDEEM_NO_PLACE} (the code is good but the member holds no place that
-- waits: nothing spent) or {REDEEM_STALE} (the place moved to another
-- device since the credential was issued).
local REDEEM_MOVED, REDEEM_INVALID, REDEEM_NO_PLACE, REDEEM_STALE = 1, 2, 3, 4

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local digest, lane, old, new = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- usable is the code's batch and its uses left when the code redeems now.
local function usable()
  local v = redis.call('HGET', KEYS[1], digest)
  if not v then
    return nil
  end
  local left, batch, its_lane = string.match(v, '^(%d+) (%S+) (%S+)$')
  left = tonumber(left)
  if not left or left <= 0 or its_lane ~= lane then
    return nil
  end
  local b = redis.call('HMGET', KEYS[2], batch .. ':lane', batch .. ':expires_ms', batch .. ':revoked_ms')
  local expires = tonumber(b[2]) or 0
  if b[1] ~= lane or b[3] or (expires > 0 and expires <= now) then
    return nil
  end
  return batch, left
end

-- move_member takes old out of from and puts new into to: a SET's
-- (kind 'set'), or a ZSET's at score.
local function move_member(kind, from, to, score)
  if kind == 'set' then
    redis.call('SREM', from, old)
    redis.call('SADD', to, new)
  else
    redis.call('ZREM', from, old)
    redis.call('ZADD', to, score, new)
  end
end

local batch, left = usable()
if not batch then
  return {REDEEM_INVALID}
end
local gen = tonumber(ARGV[5])
if gen >= 0 and (tonumber(redis.call('HGET', KEYS[3], old)) or 0) > gen then
  return {REDEEM_STALE}
end
local seq = redis.call('ZSCORE', KEYS[4], old)
if seq then
  move_member('zset', KEYS[4], KEYS[10], seq)
else
  seq = redis.call('ZSCORE', KEYS[5], old)
  if seq then
    move_member('zset', KEYS[5], KEYS[11], seq)
  elseif redis.call('SISMEMBER', KEYS[6], old) == 1 then
    move_member('set', KEYS[6], KEYS[12])
    seq = 0
  else
    return {REDEEM_NO_PLACE}
  end
end
seq = tonumber(seq)
local heard = redis.call('ZSCORE', KEYS[7], old)
if heard then
  move_member('zset', KEYS[7], KEYS[13], heard)
end
-- Every credential of old now names a place that is gone (leave.lua).
redis.call('ZADD', KEYS[8], 'GT', tonumber(redis.call('GET', KEYS[9])) or 0, old)
if seq > (tonumber(redis.call('GET', KEYS[14])) or 0) then
  redis.call('SET', KEYS[14], seq)
end
redis.call('SADD', KEYS[15], lane)
redis.call('HSET', KEYS[1], digest, (left - 1) .. ' ' .. batch .. ' ' .. lane)
redis.call('HINCRBY', KEYS[2], batch .. ':used', 1)
return {REDEEM_MOVED, seq}

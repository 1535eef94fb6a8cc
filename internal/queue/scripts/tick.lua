-- tick.lua: the refill tick. Every replica calls it several times per
-- interval; it does its work only once per interval. Intervals are aligned
-- to multiples of refill_interval_ms on the Redis clock and "next_at_ms"
-- remembers when the next one starts, so the tick is idempotent: a second
-- call within one interval, from any replica, changes nothing. Missed
-- intervals (all replicas down) are not replayed: that would send a burst
-- to the order page. Nor is a tick applied sooner than "min_next_ms", 0.9
-- interval after the last: a tick applied late (a loaded Redis or replica)
-- and the next one on time would otherwise let two refills reach the order
-- page within milliseconds. Alignment comes back by a tenth of an interval
-- per tick.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> tokens  (STRING)
-- KEYS[4] -> config  (HASH)
-- KEYS[5] -> tick    (HASH: next_at_ms and min_next_ms, at_ms/moved of the
--                     last applied tick; enter.lua counts direct admissions
--                     in "direct")
-- KEYS[6] -> history (LIST of "at_ms:admitted:waiting:abandoned", one entry
--                     per ended interval, oldest first: start, admissions,
--                     line at end, places dropped as abandoned)
-- KEYS[7] -> heard   (ZSET member=user, score=when last heard)
-- KEYS[8] -> gone    (ZSET member="<reason>:<user>", score=when)
-- KEYS[9] -> draw    (SET of a scheduled opening's participants)
-- KEYS[10] -> admitted (HASH: a renewed sliding session's start, renew.lua)
-- ARGV[1..5] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active, abandon_after_ms
-- ARGV[6] -> max expired sessions purged per tick
-- ARGV[7] -> history length kept
-- ARGV[8] -> max abandoned places dropped per tick
-- ARGV[9] -> a fresh random seed (52 bits), used if this call starts a draw
-- ARGV[10] -> max participants placed per call while a draw runs
-- Returns {applied (0|1), moved, waiting, tokens, purged, admitted in the
-- interval that just ended, abandoned places dropped, how late the tick is
-- (ms after it was due, next_at_ms, on the Redis clock: whole intervals
-- missed count too; 0 for a queue's first tick)}
local now = now_ms()
local refill, interval, ttl, max_active, paused, abandon_after, opens_at = queue_config(KEYS[4])

-- A scheduled opening's draw. From opens_at, every call (not just the
-- interval's tick) places a bounded batch of the pre-queue's participants
-- in the line at draw_key(seed, user): a uniformly random order, ahead of
-- everyone who arrived after opens_at. The first such call records the
-- seed (with draw_for = the opening), so the draw can be audited. Nobody
-- is admitted until every participant is placed.
-- (A draw left behind by an opening the operator cleared is placed too.)
if opens_at <= now and redis.call('SCARD', KEYS[9]) > 0 then
  local d = redis.call('HMGET', KEYS[5], 'draw_for', 'draw_seed')
  local seed = d[2]
  if tonumber(d[1]) ~= opens_at then
    seed = ARGV[9]
    redis.call('HSET', KEYS[5], 'draw_for', opens_at, 'draw_seed', seed, 'draw_count', 0)
  end
  local batch = redis.call('SPOP', KEYS[9], tonumber(ARGV[10]))
  for i = 1, #batch, 500 do
    local args = {}
    for j = i, math.min(i + 499, #batch) do
      args[#args + 1] = draw_key(seed, batch[j])
      args[#args + 1] = batch[j]
    end
    redis.call('ZADD', KEYS[1], unpack(args))
  end
  redis.call('HINCRBY', KEYS[5], 'draw_count', #batch)
  if redis.call('SCARD', KEYS[9]) > 0 then
    return {0, 0, 0, 0, 0, 0, 0, 0}
  end
end

local state = redis.call('HMGET', KEYS[5], 'next_at_ms', 'at_ms', 'moved', 'direct', 'min_next_ms', 'abandoned')
local next_at, min_next = tonumber(state[1]), tonumber(state[5])
if (next_at and now < next_at) or (min_next and now < min_next) then
  return {0, 0, 0, 0, 0, 0, 0, 0}
end

-- Close the interval the previous tick opened: it admitted the users that
-- tick moved plus those who entered directly on its leftover tokens, which
-- is never more than refill_size. Before the very first tick, users may
-- have entered on the initial full bucket: that counts as an interval too.
local waiting_before = redis.call('ZCARD', KEYS[1])
local admitted = (tonumber(state[3]) or 0) + (tonumber(state[4]) or 0)
if state[2] or admitted > 0 then
  local started = tonumber(state[2]) or (now - interval)
  redis.call('RPUSH', KEYS[6], string.format('%d:%d:%d:%d', started, admitted, waiting_before, tonumber(state[6]) or 0))
  redis.call('LTRIM', KEYS[6], -tonumber(ARGV[7]), -1)
end

-- Purge expired sessions first, so the count of active users below is
-- what the cap sees (which does not depend on the purge anyway). The
-- entered set is ordered by admission time (a sliding session's by its
-- last renewal), so the expired ones come first; a bounded batch keeps
-- each tick short. Each is remembered as expired, for the user who asks.
local expired = redis.call('ZRANGE', KEYS[2], '-inf', string.format('(%d', now - ttl), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[6]))
local purged = #expired
for i = 1, purged, 1000 do
  redis.call('ZREM', KEYS[2], unpack(expired, i, math.min(i + 999, purged)))
  redis.call('HDEL', KEYS[10], unpack(expired, i, math.min(i + 999, purged)))
end
mark_gone(KEYS[8], 'expired', expired, now)

-- Move up to refill_size users from the head of the line: none while
-- paused, and no more than the cap on active users leaves room for. A user
-- not heard from (enter, status) for abandon_after_ms has closed the page:
-- the place is dropped when it reaches the head, without spending a token,
-- and the next one moves instead; at most ARGV[8] such places per tick.
local room = refill
if paused == 1 then
  room = 0
elseif max_active > 0 then
  room = math.min(room, math.max(0, max_active - active_count(KEYS[2], now, ttl)))
end
local admit, dropped = {}, {}
local drop_limit = tonumber(ARGV[8])
local gone_before = now - abandon_after
-- Each round pops just the places still to fill (at most 1000, far below
-- Lua's stack limit for unpack), so every user popped is either admitted
-- or dropped; a tick drops at most drop_limit + 1000.
while #admit < room and #dropped < drop_limit do
  local popped = redis.call('ZPOPMIN', KEYS[1], math.min(room - #admit, 1000))
  if #popped == 0 then
    break
  end
  local users = {}
  for i = 1, #popped, 2 do
    users[#users + 1] = popped[i]
  end
  local heard = redis.call('ZMSCORE', KEYS[7], unpack(users))
  for i, u in ipairs(users) do
    local h = tonumber(heard[i])
    -- No record (a place from before abandonment was tracked) counts as
    -- present.
    if abandon_after > 0 and h and h <= gone_before then
      dropped[#dropped + 1] = u
    else
      admit[#admit + 1] = u
    end
  end
  redis.call('ZREM', KEYS[7], unpack(users))
end
for i = 1, #admit, 500 do
  local chunk = {}
  for j = i, math.min(i + 499, #admit) do
    chunk[#chunk + 1] = now
    chunk[#chunk + 1] = admit[j]
  end
  redis.call('ZADD', KEYS[2], unpack(chunk))
end
mark_gone(KEYS[8], 'abandoned', dropped, now)
local moved = #admit
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now - GONE_KEEP_MS)

-- Unused tokens stay, but the bucket never holds more than refill_size.
-- (Direct entries on them obey the pause and the cap too: enter.lua.)
local tokens = refill - moved
redis.call('SET', KEYS[3], tokens)

redis.call('HSET', KEYS[5],
  'next_at_ms', (math.floor(now / interval) + 1) * interval,
  'min_next_ms', now + min_spacing_ms(interval),
  'at_ms', now,
  'moved', moved,
  'abandoned', #dropped,
  'direct', 0)
return {1, moved, waiting_before - moved - #dropped, tokens, purged, admitted, #dropped, next_at and now - next_at or 0}

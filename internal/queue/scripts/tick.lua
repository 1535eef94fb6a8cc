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
-- KEYS[6] -> history (LIST of "at_ms:admitted:waiting", one entry per ended
--                     interval, oldest first: start, admissions, line at end)
-- ARGV[1..4] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active
-- ARGV[5] -> max expired sessions purged per tick
-- ARGV[6] -> history length kept
-- Returns {applied (0|1), moved, waiting, tokens, purged, admitted in the
-- interval that just ended}
local now = now_ms()
local refill, interval, ttl, max_active, paused = queue_config(KEYS[4])

local state = redis.call('HMGET', KEYS[5], 'next_at_ms', 'at_ms', 'moved', 'direct', 'min_next_ms')
local next_at, min_next = tonumber(state[1]), tonumber(state[5])
if (next_at and now < next_at) or (min_next and now < min_next) then
  return {0, 0, 0, 0, 0, 0}
end

-- Close the interval the previous tick opened: it admitted the users that
-- tick moved plus those who entered directly on its leftover tokens, which
-- is never more than refill_size. Before the very first tick, users may
-- have entered on the initial full bucket: that counts as an interval too.
local waiting_before = redis.call('ZCARD', KEYS[1])
local admitted = (tonumber(state[3]) or 0) + (tonumber(state[4]) or 0)
if state[2] or admitted > 0 then
  local started = tonumber(state[2]) or (now - interval)
  redis.call('RPUSH', KEYS[6], string.format('%d:%d:%d', started, admitted, waiting_before))
  redis.call('LTRIM', KEYS[6], -tonumber(ARGV[6]), -1)
end

-- Purge expired sessions first, so the count of active users below is
-- what the cap sees. The entered set is ordered by admission time, so the
-- expired ones are the lowest ranks; a bounded batch keeps each tick short
-- (the count of active users does not depend on the purge).
local purged = redis.call('ZCOUNT', KEYS[2], '-inf', string.format('(%d', now - ttl))
if purged > tonumber(ARGV[5]) then
  purged = tonumber(ARGV[5])
end
if purged > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, purged - 1)
end

-- Move up to refill_size users from the head of the line: none while
-- paused, and no more than the cap on active users leaves room for. ZADD
-- takes them in chunks to stay far below Lua's stack limit for unpack.
local room = refill
if paused == 1 then
  room = 0
elseif max_active > 0 then
  room = math.min(room, math.max(0, max_active - active_count(KEYS[2], now, ttl)))
end
local popped = {}
if room > 0 then
  popped = redis.call('ZPOPMIN', KEYS[1], room)
end
local moved = #popped / 2
local chunk = {}
for i = 1, #popped, 2 do
  chunk[#chunk + 1] = now
  chunk[#chunk + 1] = popped[i]
  if #chunk >= 1000 then
    redis.call('ZADD', KEYS[2], unpack(chunk))
    chunk = {}
  end
end
if #chunk > 0 then
  redis.call('ZADD', KEYS[2], unpack(chunk))
end

-- Unused tokens stay, but the bucket never holds more than refill_size.
-- (Direct entries on them obey the pause and the cap too: enter.lua.)
local tokens = refill - moved
redis.call('SET', KEYS[3], tokens)

redis.call('HSET', KEYS[5],
  'next_at_ms', (math.floor(now / interval) + 1) * interval,
  'min_next_ms', now + min_spacing_ms(interval),
  'at_ms', now,
  'moved', moved,
  'direct', 0)
return {1, moved, waiting_before - moved, tokens, purged, admitted}

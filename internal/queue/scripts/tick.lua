-- tick.lua: the refill tick. Every replica calls it several times per
-- interval; it does its work only once per interval. Intervals are aligned
-- to multiples of refill_interval_ms on the Redis clock and "next_at_ms"
-- remembers when the next one starts, so the tick is idempotent: a second
-- call within one interval, from any replica, changes nothing. Missed
-- intervals (all replicas down) are not replayed: that would send a burst
-- to the order page.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> tokens  (STRING)
-- KEYS[4] -> config  (HASH)
-- KEYS[5] -> tick    (HASH: next_at_ms, and at_ms/moved of the last applied
--                     tick; enter.lua counts direct admissions in "direct")
-- KEYS[6] -> history (LIST of "at_ms:admitted:waiting", one entry per ended
--                     interval, oldest first: start, admissions, line at end)
-- ARGV[1..3] -> default refill_size, refill_interval_ms, session_ttl_ms
-- ARGV[4] -> max expired sessions purged per tick
-- ARGV[5] -> history length kept
-- Returns {applied (0|1), moved, waiting, tokens, purged, admitted in the
-- interval that just ended}
local now = now_ms()
local refill, interval, ttl = queue_config(KEYS[4], ARGV[1], ARGV[2], ARGV[3])

local state = redis.call('HMGET', KEYS[5], 'next_at_ms', 'at_ms', 'moved', 'direct')
local next_at = tonumber(state[1])
if next_at and now < next_at then
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
  redis.call('LTRIM', KEYS[6], -tonumber(ARGV[5]), -1)
end

-- Move up to refill_size users from the head of the line. ZADD takes them
-- in chunks to stay far below Lua's stack limit for unpack.
local popped = redis.call('ZPOPMIN', KEYS[1], refill)
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
local tokens = refill - moved
redis.call('SET', KEYS[3], tokens)

-- Purge expired sessions. The entered set is ordered by admission time, so
-- the expired ones are the lowest ranks; a bounded batch keeps each tick short.
local purged = redis.call('ZCOUNT', KEYS[2], '-inf', string.format('(%d', now - ttl))
if purged > tonumber(ARGV[4]) then
  purged = tonumber(ARGV[4])
end
if purged > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, purged - 1)
end

redis.call('HSET', KEYS[5],
  'next_at_ms', (math.floor(now / interval) + 1) * interval,
  'at_ms', now,
  'moved', moved,
  'direct', 0)
return {1, moved, waiting_before - moved, tokens, purged, admitted}

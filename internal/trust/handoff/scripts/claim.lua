-- claim.lua: use a hand-over, once: it is deleted before its place is
-- moved. The move itself is the queue's (queue.Store.MovePlace, the
-- queue's move.lua), which the caller asks for next with the member and
-- generation this returns: a compare-and-set on the place's generation,
-- so a used hand-over moves its place at most once, and of two hand-overs
-- made at one generation at most one moves it. Should the caller die
-- between the two calls, the hand-over is spent and the place stays with
-- its old device: neither lost nor held twice.
--
-- A guess of a typed code costs an attempt; failed attempts are counted
-- per client and per queue, and over either limit every attempt by code is
-- refused unread until the window ends (handoff.go shows the arithmetic).
--
-- KEYS[1] -> live    (HASH: the live hand-overs, common.lua)
-- KEYS[2] -> expires (ZSET member=user, score=when its hand-over expires)
-- KEYS[3] -> the client's failed attempts (STRING counter, expiring)
-- KEYS[4] -> the queue's failed attempts by code (STRING counter, expiring)
-- ARGV[1] -> the field to look up ("t:..." a token, "c:..." a typed code)
-- ARGV[2], ARGV[3] -> the client's limit: failed attempts (0: no client,
--                     no limit), window (ms)
-- ARGV[4], ARGV[5] -> the queue's limit on failed attempts by code, window (ms)
-- Returns {1, member, generation the hand-over was made at}, {0}
-- (unknown, used or expired: one answer), or {-1, wait ms} over an
-- attempt limit.
local field = ARGV[1]
local by_code = string.sub(field, 1, 2) == 'c:'
local now = now_ms()
sweep(KEYS[1], KEYS[2], now)

-- over reports the wait (ms) while counter key holds max or more.
local function over(key, max)
  if max > 0 and (tonumber(redis.call('GET', key)) or 0) >= max then
    return math.max(1, redis.call('PTTL', key))
  end
  return 0
end
local wait = over(KEYS[3], tonumber(ARGV[2]))
if by_code then
  wait = math.max(wait, over(KEYS[4], tonumber(ARGV[4])))
end
if wait > 0 then
  return {-1, wait}
end

local function count(key, window)
  if redis.call('INCR', key) == 1 then
    redis.call('PEXPIRE', key, window)
  end
end

local v = redis.call('HGET', KEYS[1], field)
local f = v and split(v)
if not f or tonumber(f[3]) <= now then
  if tonumber(ARGV[2]) > 0 then
    count(KEYS[3], tonumber(ARGV[3]))
  end
  if by_code then
    count(KEYS[4], tonumber(ARGV[5]))
  end
  return {0}
end
-- Used once, whatever comes of the move.
drop(KEYS[1], KEYS[2], f[1])
return {1, f[1], tonumber(f[2])}

-- claim.lua: use a hand-over (once) and move its place: the place's
-- generation goes up, so every credential issued before stops working in
-- the scripts of enter, status and leave (keep_current in the queue's
-- common.lua), and the move is recorded for the replicas' far-back status
-- path (the moved ZSET, read by handoff.Tracker). The place itself, its
-- member id and its arrival number, is not touched: same member, same
-- position.
--
-- A guess of a typed code costs an attempt; failed attempts are counted
-- per client and per queue, and over either limit every attempt by code is
-- refused unread until the window ends (handoff.go shows the arithmetic).
--
-- KEYS[1] -> live    (HASH: the live hand-overs, common.lua)
-- KEYS[2] -> expires (ZSET member=user, score=when its hand-over expires)
-- KEYS[3] -> gen     (HASH member=user, value=generation: queue.GenKey)
-- KEYS[4] -> moved   (ZSET member=user, score=when it last moved: queue.MovedKey)
-- KEYS[5] -> waiting (ZSET: the queue's line)
-- KEYS[6] -> draw    (SET: a scheduled opening's participants)
-- KEYS[7] -> the client's failed attempts (STRING counter, expiring)
-- KEYS[8] -> the queue's failed attempts by code (STRING counter, expiring)
-- ARGV[1] -> the field to look up ("t:..." a token, "c:..." a typed code)
-- ARGV[2], ARGV[3] -> the client's limit: failed attempts (0: no client,
--                     no limit), window (ms)
-- ARGV[4], ARGV[5] -> the queue's limit on failed attempts by code, window (ms)
-- ARGV[6] -> how long a move stays in the moved ZSET (ms)
-- ARGV[7] -> how long the gen HASH is kept after the queue's last move (ms)
-- Returns {1, member, generation, arrival number (0: in a draw)}, {0}
-- (unknown, used, expired, or its place no longer waiting: one answer),
-- or {-1, wait ms} over an attempt limit.
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
local wait = over(KEYS[7], tonumber(ARGV[2]))
if by_code then
  wait = math.max(wait, over(KEYS[8], tonumber(ARGV[4])))
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
    count(KEYS[7], tonumber(ARGV[3]))
  end
  if by_code then
    count(KEYS[8], tonumber(ARGV[5]))
  end
  return {0}
end
local member, gen = f[1], tonumber(f[2])
-- Used once, whatever comes of it.
drop(KEYS[1], KEYS[2], member)
local seq = redis.call('ZSCORE', KEYS[5], member)
if current(KEYS[3], member) > gen or (not seq and redis.call('SISMEMBER', KEYS[6], member) == 0) then
  return {0}
end
local next_gen = gen + 1
redis.call('HSET', KEYS[3], member, next_gen)
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[7]))
redis.call('ZADD', KEYS[4], now, member)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[6]))
return {1, member, next_gen, tonumber(seq) or 0}

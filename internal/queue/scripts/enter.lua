-- enter.lua: put users into the queue, one after the other in the order
-- given (the order in which they reached this replica). A user is admitted
-- at once only while tokens remain and nobody is waiting (so a missing token
-- key can never let a newcomer jump the line); otherwise the user joins the
-- tail with the next arrival number from Redis. Re-entry always goes to the
-- back: an admission is given up, and a place in the line is replaced by the
-- new arrival number (ZADD updates the score of a member already there).
--
-- Taking many users per call spreads the script's fixed cost (clock,
-- config, bucket) over all of them, and each step below is one command for
-- the whole call, not one per user; each call is still atomic. Positions
-- are the places once the whole call is done: a user given twice in one
-- call ends where the later entry puts them, and if both entries queue,
-- both answers give that one place.
--
-- KEYS[1] -> waiting (ZSET member=user, score=arrival seq)
-- KEYS[2] -> entered (ZSET member=user, score=admission time ms)
-- KEYS[3] -> tokens  (STRING, unset means a full bucket)
-- KEYS[4] -> seq     (STRING arrival counter)
-- KEYS[5] -> config  (HASH)
-- KEYS[6] -> tick    (HASH; field "direct" counts admissions since the last tick)
-- KEYS[7] -> heard   (ZSET member=user, score=when last heard; for abandonment)
-- KEYS[8] -> draw    (SET of a scheduled opening's participants, see tick.lua)
-- KEYS[9] -> admitted (HASH: a renewed sliding session's start, renew.lua)
-- ARGV[1..5] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active, abandon_after_ms
-- ARGV[6..]  -> user ids
-- Returns {waiting, until_next_tick_ms, interval_ms, refill_size, ttl_ms, paused,
--          opens_at_ms, prequeue_from_ms, abandon_after_ms, until_open_ms, status1, place1, status2, place2, ...}
-- where waiting is the line after the last user (the draw's participants
-- included), until_open_ms the time until a scheduled opening (0: none
-- ahead), and place is the position when WAITING (0 while in a draw) and
-- the admission time (ms) when ENTERED.
--
-- Before a scheduled opening (opens_at_ms in the future) nobody enters the
-- line: from prequeue_from_ms everyone joins the draw (the order among them
-- is drawn at the opening), before it everyone is NOT_OPEN.
local FIRST = DEFAULTS + 1 -- ARGV index of the first user
local now = now_ms()
local refill, interval, ttl, max_active, paused, abandon_after, opens_at, prequeue_from = queue_config(KEYS[5])
local n = #ARGV - FIRST + 1
local in_draw = redis.call('SCARD', KEYS[8])

if opens_at > now then
  local out = reply_head(redis.call('ZCARD', KEYS[1]) + in_draw, KEYS[6], now,
    refill, interval, ttl, paused, abandon_after, opens_at, prequeue_from)
  local status = NOT_OPEN
  if now >= prequeue_from then
    status = WAITING
    local users, heard = {}, {}
    for i = 1, n do
      users[i] = ARGV[FIRST - 1 + i]
      heard[2 * i - 1] = now
      heard[2 * i] = users[i]
    end
    -- Entering again gives up an admission, as ever; in the draw it
    -- changes nothing else (the order is drawn at the opening).
    if redis.call('ZREM', KEYS[2], unpack(users)) > 0 then
      redis.call('HDEL', KEYS[9], unpack(users))
    end
    redis.call('ZREM', KEYS[1], unpack(users))
    redis.call('SADD', KEYS[8], unpack(users))
    redis.call('ZADD', KEYS[7], unpack(heard))
    out[1] = redis.call('ZCARD', KEYS[1]) + redis.call('SCARD', KEYS[8])
  end
  for i = 1, n do
    out[#out + 1] = status
    out[#out + 1] = 0
  end
  return out
end

local tokens = tonumber(redis.call('GET', KEYS[3])) or refill
if tokens > refill then
  tokens = refill -- refill_size was lowered since the last tick
end
-- An opening's draw still being placed in the line (tick.lua) counts as
-- people waiting: they are ahead of everyone who arrives now.
local waiting = redis.call('ZCARD', KEYS[1]) + in_draw
local out = reply_head(0, KEYS[6], now, refill, interval, ttl, paused, abandon_after, opens_at, prequeue_from)
local HEAD = #out

-- The first users go straight in while tokens remain, if nobody waits, the
-- queue is not paused and the cap on active users leaves room.
local direct = 0
if waiting == 0 and paused == 0 then
  direct = math.min(tokens, n)
  if max_active > 0 and direct > 0 then
    direct = math.min(direct, math.max(0, max_active - active_count(KEYS[2], now, ttl)))
  end
end
if direct > 0 then
  local args = {}
  for i = 1, direct do
    args[2 * i - 1] = now
    args[2 * i] = ARGV[FIRST - 1 + i]
    out[HEAD - 1 + 2 * i] = ENTERED
    out[HEAD + 2 * i] = now
  end
  -- ZADD counts new members only: fewer means someone held an admission,
  -- now replaced by this one, whose start is its score.
  if redis.call('ZADD', KEYS[2], unpack(args)) < direct then
    local users = {}
    for i = 1, direct do
      users[i] = ARGV[FIRST - 1 + i]
    end
    redis.call('HDEL', KEYS[9], unpack(users))
  end
  redis.call('SET', KEYS[3], tokens - direct)
  redis.call('HINCRBY', KEYS[6], 'direct', direct)
end

-- The others join the tail in the order given, each with its own arrival
-- number, giving up any admission they held.
local rest = n - direct
if rest > 0 then
  local users, args = {}, {}
  local first = redis.call('INCRBY', KEYS[4], rest) - rest
  for j = 1, rest do
    local user = ARGV[FIRST - 1 + direct + j]
    users[j] = user
    args[2 * j - 1] = first + j
    args[2 * j] = user
  end
  if redis.call('ZREM', KEYS[2], unpack(users)) > 0 then
    redis.call('HDEL', KEYS[9], unpack(users))
  end
  -- ZADD counts newcomers only: a user already waiting moves to the back.
  waiting = waiting + redis.call('ZADD', KEYS[1], unpack(args))
  -- Heard from now (the same arrival numbers' slots, reused for the time).
  for j = 1, rest do
    args[2 * j - 1] = now
  end
  redis.call('ZADD', KEYS[7], unpack(args))
  -- These users are now the last of the line, in the order given; walking
  -- back from the end, each distinct user is one place further forward.
  local place, behind = {}, 0
  for j = rest, 1, -1 do
    local user = users[j]
    if not place[user] then
      place[user] = waiting - behind
      behind = behind + 1
    end
    out[HEAD - 1 + 2 * (direct + j)] = WAITING
    out[HEAD + 2 * (direct + j)] = place[user]
  end
end

out[1] = waiting
return out

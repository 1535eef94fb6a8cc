-- status.lua: where users stand. Takes many users per call, so the fixed
-- cost (clock, config, line length) is paid once for all of them. Its one
-- write: a waiting user who asks is heard from (abandonment, tick.lua).
-- Needs Redis 6.2 or later (ZMSCORE).
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> config  (HASH)
-- KEYS[4] -> tick    (HASH, read for the time to the next tick)
-- KEYS[5] -> heard   (ZSET member=user, score=when last heard)
-- KEYS[6] -> gone    (ZSET member="<reason>:<user>", score=when)
-- KEYS[7] -> draw    (SET of a scheduled opening's participants)
-- KEYS[8] -> admitted (HASH member=user, value=admission time ms; only for
--                      sliding sessions renewed by renew.lua)
-- ARGV[1..5] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active, abandon_after_ms
-- ARGV[6..]  -> user ids
-- Returns {waiting, until_next_tick_ms, interval_ms, refill_size, ttl_ms, paused,
--          opens_at_ms, prequeue_from_ms, abandon_after_ms, until_open_ms, status1, place1, status2, place2, ...}
-- where waiting includes a draw's participants, until_open_ms is the time
-- until a scheduled opening (0: none ahead), place is the position when
-- WAITING (0 while in a draw), the admission time (ms) when
-- ENTERED (an entry pass names it, so a pass ends with its admission),
-- and when NOT_WAITING the code of why the user's place ended (0: none
-- known; REASONS in common.lua).
local now = now_ms()
local refill, interval, ttl, _, paused, abandon_after, opens_at, prequeue_from = queue_config(KEYS[3])
local in_draw = redis.call('SCARD', KEYS[7])
local out = reply_head(redis.call('ZCARD', KEYS[1]) + in_draw, KEYS[4], now,
  refill, interval, ttl, paused, abandon_after, opens_at, prequeue_from)

-- One ZMSCORE answers "admitted?" for every user of the call.
local users = {}
for i = DEFAULTS + 1, #ARGV do
  users[i - DEFAULTS] = ARGV[i]
end
local admitted = redis.call('ZMSCORE', KEYS[2], unpack(users))
local drawing = {}
if in_draw > 0 then
  drawing = redis.call('SMISMEMBER', KEYS[7], unpack(users))
end

local heard, renewed = {}, {}
for i, user in ipairs(users) do
  -- An admission older than the session TTL no longer counts, even before
  -- the tick has purged it. (Its score is when it began, or for a sliding
  -- session its last renewal: admission_start below.)
  local admitted_at = tonumber(admitted[i])
  if admitted_at and admitted_at > now - ttl then
    out[#out + 1] = ENTERED
    out[#out + 1] = admitted_at
    renewed[#renewed + 1] = #out
    renewed[#renewed + 1] = user
  else
    local rank = redis.call('ZRANK', KEYS[1], user)
    if rank or drawing[i] == 1 then
      out[#out + 1] = WAITING
      out[#out + 1] = rank and rank + 1 or 0 -- 0: in the draw, no place yet
      heard[#heard + 1] = now
      heard[#heard + 1] = user
    elseif admitted_at then
      out[#out + 1] = NOT_WAITING
      out[#out + 1] = 3 -- expired, not purged yet
    else
      out[#out + 1] = NOT_WAITING
      out[#out + 1] = gone_reason(KEYS[6], user)
    end
  end
end
if #heard > 0 then
  redis.call('ZADD', KEYS[5], unpack(heard))
end
-- A renewed sliding session's start is kept apart from its score; one
-- HMGET for the call's admitted users, none when nobody asking is admitted.
if #renewed > 0 then
  local fields = {}
  for j = 2, #renewed, 2 do
    fields[#fields + 1] = renewed[j]
  end
  local starts = redis.call('HMGET', KEYS[8], unpack(fields))
  for j = 1, #fields do
    local start = tonumber(starts[j])
    if start then
      out[renewed[2 * j - 1]] = start
    end
  end
end
return out

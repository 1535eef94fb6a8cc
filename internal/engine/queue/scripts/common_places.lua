-- common_places.lua: the rounding of measured durations,
-- and why a place ended (the gone ZSET, a moved place's old credentials).
-- Part of the common prelude (common.lua).

-- stat_round keeps two significant digits of a duration (ms), so that
-- durations measured one by one (done.lua) fall into few groups: a
-- percentile read from them is within 5 % of the exact one.
local function stat_round(ms)
  if ms > -100 and ms < 100 then
    return ms
  end
  local p = 10 ^ (math.floor(math.log10(math.abs(ms))) - 1)
  return math.floor(ms / p + 0.5) * p
end

-- Why a user holds no place any more, kept for an hour in the gone ZSET as
-- members "<reason>:<user>" (score: when), so a user who comes back is told.
-- The codes are shared with reply.go (reasons); the names go into the members.
local REASONS = {'abandoned', 'left', 'expired', 'removed', 'done', 'moved', 'closed'}
local REASON_MOVED = 6 -- never recorded in gone: answered from the gen HASH (keep_current)
local GONE_KEEP_MS = 3600000

-- trim_below removes the members of the ZSET key scored up to max (a
-- ZREMRANGEBYSCORE bound: "(x" leaves x), at most limit of them, the
-- lowest first (the first ranks are the lowest scores), and returns how
-- many it removed. ZREMRANGEBYSCORE has no LIMIT: on a set the users'
-- traffic fills, one call could otherwise remove a burst of any size.
-- ZCOUNT is O(log N), so a call costs O(log N + limit).
local function trim_below(key, max, limit)
  local n = math.min(redis.call('ZCOUNT', key, '-inf', max), limit)
  if n > 0 then
    redis.call('ZREMRANGEBYRANK', key, 0, n - 1)
  end
  return n
end

-- mark_gone records reason (a name from REASONS) for users.
-- (args is indexed by its own length, not by i: it is emptied every 500
-- users, and a table filled from index 1001 has length 0.)
-- Each record written retires up to two older than GONE_KEEP_MS: however
-- fast leaves and dones feed the set, it never holds more than an hour's
-- records and what it held before, at a cost bounded by the call's own
-- writes; the tick retires the rest (tick.lua, GONE_TRIM_MAX).
local function mark_gone(gone_key, reason, users, now)
  local args = {}
  for _, u in ipairs(users) do
    args[#args + 1] = now
    args[#args + 1] = reason .. ':' .. u
    if #args >= 1000 then
      redis.call('ZADD', gone_key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then
    redis.call('ZADD', gone_key, unpack(args))
  end
  if #users > 0 then
    trim_below(gone_key, now - GONE_KEEP_MS, 2 * #users)
  end
end

-- gone_reason is the code (index in REASONS) of the latest reason recorded
-- for user, or 0.
local function gone_reason(gone_key, user)
  local members = {}
  for i, r in ipairs(REASONS) do
    members[i] = r .. ':' .. user
  end
  local at = redis.call('ZMSCORE', gone_key, unpack(members))
  local code, latest = 0, nil
  for i = 1, #REASONS do
    local t = tonumber(at[i])
    if t and (not latest or t > latest) then
      code, latest = i, t
    end
  end
  return code
end

-- keep_current drops from users (and slot, gens) the calls whose place
-- credential is of an older generation than their place: the place moved
-- to another device (move.lua, which internal/trust/handoff calls, bumps the member's generation in
-- the gen HASH, member=user, value=generation, only for places that ever
-- moved). Those are answered NOT_WAITING with the reason "moved" and
-- change nothing. gens[j] is users[j]'s credential's generation (-1:
-- the caller holds no credential: nothing to check). One
-- EXISTS when no place of the queue ever moved, else one HMGET.
local function keep_current(gen_key, users, slot, gens, out, head)
  if #users == 0 or redis.call('EXISTS', gen_key) == 0 then
    return users, slot
  end
  local cur = redis.call('HMGET', gen_key, unpack(users))
  local kept, kept_slot = {}, {}
  for j, user in ipairs(users) do
    if gens[j] >= 0 and (tonumber(cur[j]) or 0) > gens[j] then
      out[head + 2 * slot[j] - 1] = NOT_WAITING
      out[head + 2 * slot[j]] = REASON_MOVED
    else
      kept[#kept + 1] = user
      kept_slot[#kept] = slot[j]
    end
  end
  return kept, kept_slot
end

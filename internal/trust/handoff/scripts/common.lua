-- common.lua: prepended to each hand-over script. The live hand-overs of a
-- queue are fields of one HASH (so no script builds a key name):
--   t:<sha256 of the token> -> "<member>\n<generation>\n<expires ms>"
--   c:<sha256 of the code>  -> the same
--   m:<member>              -> "<token field>\n<code field>": the member's
--                              one live hand-over, dropped with it
-- and a ZSET member=user, score=when its hand-over expires (ms), from which
-- each call sweeps a few expired ones.

local SWEEP = 100 -- expired hand-overs one call drops at most

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function split(s)
  local out = {}
  for part in string.gmatch(s, '[^\n]+') do
    out[#out + 1] = part
  end
  return out
end

-- drop removes member's live hand-over, if any.
local function drop(live_key, exp_key, member)
  local v = redis.call('HGET', live_key, 'm:' .. member)
  if v then
    local f = split(v)
    redis.call('HDEL', live_key, f[1], f[2], 'm:' .. member)
  end
  redis.call('ZREM', exp_key, member)
end

-- sweep drops up to SWEEP hand-overs that expired before now.
local function sweep(live_key, exp_key, now)
  local old = redis.call('ZRANGEBYSCORE', exp_key, '-inf', now, 'LIMIT', 0, SWEEP)
  for _, member in ipairs(old) do
    drop(live_key, exp_key, member)
  end
end

-- current is the generation of member's place credentials (0 until the
-- place first moves).
local function current(gen_key, member)
  return tonumber(redis.call('HGET', gen_key, member)) or 0
end

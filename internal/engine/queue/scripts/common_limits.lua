-- common_limits.lua: the rate limits enter.lua and status.lua charge, and
-- when a full line has room again. Part of the common prelude (common.lua).

-- Rate limits (enter.lua and status.lua): ARGV[DEFAULTS + 1 .. LIMITS] are
-- the replica's limits per client address and per place, each the time
-- one request earns back (ms, fractional; 0: no limit) and the burst.
local LIMITS = DEFAULTS + 4

-- rate_take is one generic cell rate algorithm (GCRA) check of the bucket
-- at key for cost calls: it holds the time (ms) at which the bucket is full
-- again, and expires then, so an idle client costs no memory. Up to burst
-- calls pass at once, then one per period. Returns the new value to store
-- when the calls pass (commit it with rate_commit), or nil and the wait
-- (ms).
local function rate_take(key, now, period, burst, cost)
  if period <= 0 then
    return nil, 0
  end
  local full_at = math.max(tonumber(redis.call('GET', key)) or now, now) + period * cost
  local wait = full_at - now - period * burst
  if wait > 0 then
    return nil, wait
  end
  return full_at, 0
end

local function rate_commit(key, full_at, now)
  if full_at then
    redis.call('SET', key, full_at, 'PX', math.max(1, math.ceil(full_at - now)))
  end
end

-- charge_limits applies the rate limits to call i of enter.lua or
-- status.lua: the costs to charge its client's and its place's buckets
-- (0: not asked; the replica's local stage has let the call through, see
-- local.go), with its two buckets' keys (read only for a cost above 0). A
-- call over either limit is answered LIMITED with the wait (in out, after
-- head) and false returned; one within both is charged to both.
local function charge_limits(i, client_cost, place_cost, client_key, place_key, now, out, head)
  local client_at, client_wait, place_at, place_wait = nil, 0, nil, 0
  if client_cost > 0 then
    client_at, client_wait = rate_take(client_key, now, tonumber(ARGV[DEFAULTS + 1]), tonumber(ARGV[DEFAULTS + 2]), client_cost)
  end
  if place_cost > 0 then
    place_at, place_wait = rate_take(place_key, now, tonumber(ARGV[DEFAULTS + 3]), tonumber(ARGV[DEFAULTS + 4]), place_cost)
  end
  if client_wait > 0 or place_wait > 0 then
    out[head + 2 * i - 1] = LIMITED
    out[head + 2 * i] = math.ceil(math.max(client_wait, place_wait))
    return false
  end
  rate_commit(client_key, client_at, now)
  rate_commit(place_key, place_at, now)
  return true
end

-- pass_limits is charge_limits for call i of status.lua, whose ARGV from
-- a + 1 are its user, then the costs to charge its client's and its
-- place's buckets.
local function pass_limits(i, a, client_key, place_key, now, out, head)
  return charge_limits(i, tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), client_key, place_key, now, out, head)
end

-- until_room_ms estimates when a line of waiting people, over its cap,
-- has room again: the ticks it takes to admit the excess (at least a
-- second, so nobody is told to come back at once).
local function until_room_ms(waiting, max_waiting, refill, interval, until_next)
  local ticks = math.ceil((waiting - max_waiting + 1) / math.max(refill, 1))
  return math.max(1000, until_next + math.max(ticks - 1, 0) * interval)
end

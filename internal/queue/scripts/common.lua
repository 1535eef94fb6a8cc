-- common.lua: helpers prepended to every script of this folder (see scripts.go).
-- Each script reads the clock and the queue's config from Redis itself, so
-- every replica agrees on time and settings whatever its own clock says.

-- now_ms: Redis server time in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- queue_config: refill_size, refill_interval_ms, session_ttl_ms from the
-- config HASH, falling back to the calling replica's defaults for any field
-- that is missing (a fresh or flushed Redis).
local function queue_config(key, def_size, def_interval, def_ttl)
  local v = redis.call('HMGET', key, 'refill_size', 'refill_interval_ms', 'session_ttl_ms')
  return tonumber(v[1]) or tonumber(def_size),
         tonumber(v[2]) or tonumber(def_interval),
         tonumber(v[3]) or tonumber(def_ttl)
end

-- until_next_tick_ms: time left in the current interval. Ticks are aligned
-- to multiples of the interval on the Redis clock (see tick.lua). The ETA
-- is built from it in Go (Ticket.ETA).
local function until_next_tick_ms(now, interval)
  return interval - (now % interval)
end

-- Status codes shared with store.go.
local ENTERED, WAITING, NOT_WAITING = 1, 2, 3

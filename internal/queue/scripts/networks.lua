-- networks.lua: the defences kept per network of the client (issue 26.2),
-- prepended after common.lua to enter.lua and challenge.lua (scripts.go):
-- the enter limits of the client's wider networks, and the price of a
-- place, proof of work rising with the places its network holds in the
-- line and with the queue's arrival rate (price.go has the design, and
-- mirrors the constants below; TestPriceMatchesLua checks both agree).

local PRICE_SITE_SHARE = 4         -- a /48 holding 4n places pays as a /56 holding n
local PRICE_HELD_CAP = 4096        -- a network's count of places is capped here
local PRICE_MAX_PRESSURE = 4       -- bits a flood of arrivals adds at most
local PRICE_MAX_DIFFICULTY = 32    -- MaxChallengeDifficulty
local PRICE_HELD_TTL_MS = 7200000  -- a network's count expires 2 h after its last new place
local ARRIVALS_WINDOW_MS = 10000   -- the arrival rate's sliding window

-- take_all is rate_take over several buckets, each {key, period_ms,
-- burst, cost} (cost 0: not asked): either every bucket passes and all
-- are charged, or none is and the longest wait (ms) is returned; 0 when
-- they passed.
local function take_all(buckets, now)
  local taken, wait = {}, 0
  for i, b in ipairs(buckets) do
    if b[4] > 0 then
      local at, w = rate_take(b[1], now, tonumber(b[2]), tonumber(b[3]), b[4])
      taken[i] = at
      wait = math.max(wait, w)
    end
  end
  if wait > 0 then
    return wait
  end
  for i, b in ipairs(buckets) do
    if b[4] > 0 then
      rate_commit(b[1], taken[i], now)
    end
  end
  return 0
end

-- price_difficulty: the proof of work (leading zero bits) the next place
-- of a network holding `held` places costs, at base `bits` (0: no price)
-- and `pressure` bits: bits + pressure + ceil(log2(held²)), none for a
-- network holding nothing. Whole numbers only, so Go computes the same
-- (PriceDifficulty).
local function price_difficulty(bits, held, pressure)
  if bits <= 0 or held <= 0 then
    return 0
  end
  held = math.min(held, PRICE_HELD_CAP)
  local sq, log = held * held, 0
  while 2 ^ log < sq do
    log = log + 1
  end
  return math.min(bits + math.max(0, math.min(pressure, PRICE_MAX_PRESSURE)) + log, PRICE_MAX_DIFFICULTY)
end

-- held_floor: the bound below which a network's places (arrival numbers)
-- have all left the line, as ZREMRANGEBYSCORE's max: "(<head's score>",
-- "+inf" for an empty line, or nil while a scheduled opening's draw is
-- open or not yet placed (its places carry no arrival number yet).
local function held_floor(waiting_key, in_draw, opens_at, now)
  if opens_at > now or in_draw > 0 then
    return nil
  end
  local head = redis.call('ZRANGE', waiting_key, 0, 0, 'WITHSCORES')
  if #head == 0 then
    return '+inf'
  end
  return '(' .. head[2]
end

-- The places each network holds, read once per script call (held_cache)
-- and counted up for the calls already let through in it (held_tally),
-- so that a batch of one network's enters pays as if one after another.
local held_cache, held_tally = {}, {}

local function network_held(key, floor)
  if held_cache[key] == nil then
    if floor then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', floor)
    end
    held_cache[key] = redis.call('ZCARD', key)
  end
  return held_cache[key] + (held_tally[key] or 0)
end

-- price_of: what the next place costs a caller whose networks' held keys
-- are nets ({network} or {network, site}).
local function price_of(nets, floor, bits, pressure)
  local n = network_held(nets[1], floor)
  if nets[2] then
    n = math.max(n, math.ceil(network_held(nets[2], floor) / PRICE_SITE_SHARE))
  end
  return price_difficulty(bits, n, pressure)
end

-- price_paid counts a call let through against its networks, for the
-- calls after it in the same script call.
local function price_paid(nets)
  for _, k in ipairs(nets) do
    held_tally[k] = (held_tally[k] or 0) + 1
  end
end

-- held_add records user's place (its arrival number; 0 in a draw) in the
-- held ZSET of each of nets, keeping the newest PRICE_HELD_CAP.
local function held_add(nets, user, seq)
  for _, k in ipairs(nets) do
    if redis.call('ZADD', k, seq, user) > 0 and (held_cache[k] or 0) + (held_tally[k] or 0) >= PRICE_HELD_CAP then
      redis.call('ZREMRANGEBYRANK', k, 0, -(PRICE_HELD_CAP + 1))
    end
    redis.call('PEXPIRE', k, PRICE_HELD_TTL_MS)
  end
end

-- The queue's arrivals over a sliding window, in a HASH {w: the window's
-- number, n: its arrivals, p: the previous window's}. arrivals_window
-- returns the current window's number and both counts.
local function arrivals_window(key, now)
  local v = redis.call('HMGET', key, 'w', 'n', 'p')
  local cur = math.floor(now / ARRIVALS_WINDOW_MS)
  local w, n = tonumber(v[1]), tonumber(v[2]) or 0
  if w == cur then
    return cur, n, tonumber(v[3]) or 0
  elseif w == cur - 1 then
    return cur, 0, n
  end
  return cur, 0, 0
end

-- arrival_pressure: the bits the queue's arrival rate adds to every price
-- (0 at or below calm arrivals a second, or with calm 0; one more per
-- doubling above, up to PRICE_MAX_PRESSURE).
local function arrival_pressure(key, now, calm)
  if calm <= 0 then
    return 0
  end
  local _, n, p = arrivals_window(key, now)
  local inside = 1 - (now % ARRIVALS_WINDOW_MS) / ARRIVALS_WINDOW_MS -- of the previous window
  local rate = (p * inside + n) * 1000 / ARRIVALS_WINDOW_MS
  local bits = 0
  while bits < PRICE_MAX_PRESSURE and rate > calm * 2 ^ bits do
    bits = bits + 1
  end
  return bits
end

-- arrivals_note counts places made now.
local function arrivals_note(key, now, count)
  if count <= 0 then
    return
  end
  local cur, n, p = arrivals_window(key, now)
  redis.call('HSET', key, 'w', cur, 'n', n + count, 'p', p)
  redis.call('PEXPIRE', key, 2 * ARRIVALS_WINDOW_MS)
end

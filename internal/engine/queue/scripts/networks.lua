-- networks.lua: the defences kept per network of the client, prepended
-- after the common prelude (common.lua) to enter.lua and challenge.lua (scripts.go): the enter
-- limits of the client's wider networks, and the price of a place, proof
-- of work rising with the places its network holds in the line and with
-- the queue's arrival rate, never above the ceiling a person can pay
-- (price.go has the design, and mirrors the constants below;
-- TestPriceMatchesLua checks both agree).

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
-- of a network holding `held` places would cost, at base `bits` (0: no
-- price) and `pressure` bits, before the ceiling (price_need):
-- bits + pressure + ceil(log2(held²)), none for a network holding
-- nothing. Whole numbers only, so Go computes the same (PriceDifficulty).
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
-- have all left the line, as ZREMRANGEBYSCORE's max: "(<lowest score>"
-- of the line's head and of its held places (a place set aside at the
-- head still counts in its network's price until it is admitted or
-- dropped, or a network could park places for free), "+inf" when both
-- are empty, or nil while a scheduled opening's draw is open or not yet
-- placed (its places carry no arrival number yet).
local function held_floor(waiting_key, held_key, in_draw, opens_at, now)
  if opens_at > now or in_draw > 0 then
    return nil
  end
  local low = nil
  for _, key in ipairs({waiting_key, held_key}) do
    local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #head > 0 and (low == nil or tonumber(head[2]) < low) then
      low = tonumber(head[2])
    end
  end
  if low == nil then
    return '+inf'
  end
  return '(' .. low
end

-- Whether a network placed anyone lately is decided on the replica
-- (seen.go): a network's first place there is free and never reaches
-- this file; a later one comes with, per network, whether the replica
-- placed someone from it lately (seen: 1) or not (0: a site whose
-- network is new, say). A network the replica saw counts at least one
-- place, though its ZSET holds none: its first place left no record in
-- Redis. Only a network's second place starts its ZSET, with a stand-in
-- for the first ("~": scored as the second, it leaves a little later
-- than the first did).

-- The places each network holds, read once per script call (held_cache,
-- with held_base the members its ZSET had) and counted up for the calls
-- already let through in it (held_tally), so that a batch of one
-- network's enters pays as if one after another. held_added counts the
-- places recorded for it in this call.
local held_cache, held_base, held_tally, held_added, held_zadded

-- networks_begin sets this file's values for a call (scripts.go).
local function networks_begin()
  held_cache, held_base, held_tally, held_added, held_zadded = {}, {}, {}, {}, {}
end

-- networks_held reads the places of each of nets ({held ZSET key,
-- seen}) not read yet in this call: none for a network not seen, else
-- its ZSET's (trimmed to the line at floor), at least one.
local function networks_held(nets, floor)
  for _, net in ipairs(nets) do
    local key = net[1]
    if held_cache[key] == nil then
      local base, n = 0, 0
      if net[2] == 1 then
        if floor then
          redis.call('ZREMRANGEBYSCORE', key, '-inf', floor)
        end
        base = redis.call('ZCARD', key)
        n = math.max(base, 1) -- its first place left no record here
      end
      held_base[key], held_cache[key] = base, n
    end
  end
end

local function network_held(net)
  return held_cache[net[1]] + (held_tally[net[1]] or 0)
end

-- price_of: what the next place costs a caller whose networks are nets
-- ({network} or {network, site}, each {held ZSET key, seen}).
local function price_of(nets, floor, bits, pressure)
  networks_held(nets, floor)
  local n = network_held(nets[1])
  if nets[2] then
    n = math.max(n, math.ceil(network_held(nets[2]) / PRICE_SITE_SHARE))
  end
  return price_difficulty(bits, n, pressure)
end

-- price_need: what a place asks of its caller, from the queue's own
-- challenge_difficulty, the price of its networks (`price`, before the
-- ceiling; nil: not counted) and its class: {bits} of proof of work, or
-- nil when it must pass a human check instead. A person never pays more
-- than `ceiling` bits, pressure included: beyond that a network meets its
-- rate limits and, where configured, a human check, not minutes of
-- hashing. `hosting` (a data centre or VPN exit) pays the ceiling for
-- every place. mode is the queue's human_check: "always" asks everyone,
-- "escalate" anyone whose place has a price (a network past its free
-- place, hosting); a caller who passed one (human) pays nothing more.
-- While the provider is unreachable (avail false) the check falls back
-- to proof of work at the ceiling: never open, never stuck.
local function price_need(difficulty, price, hosting, human, mode, ceiling, avail)
  if hosting then
    price = ceiling
  end
  price = price or 0
  local ask_human = mode == 'always' or (mode == 'escalate' and price > 0)
  if ask_human then
    if human then
      return 0
    elseif avail then
      return nil
    end
    return ceiling
  end
  return math.min(math.max(difficulty, price), ceiling)
end

-- price_paid counts a call let through against its networks, for the
-- calls after it in the same script call.
local function price_paid(nets)
  for _, net in ipairs(nets) do
    held_tally[net[1]] = (held_tally[net[1]] or 0) + 1
  end
end

-- held_add records user's place (its arrival number; 0 in a draw) for
-- each of nets that holds one already (the replica records a first place
-- in its own filter, seen.go): in its ZSET, with the stand-in for the
-- first when the ZSET has none, keeping the newest PRICE_HELD_CAP.
local function held_add(nets, user, seq)
  for _, net in ipairs(nets) do
    local k = net[1]
    local prior = (held_cache[k] or 0) + (held_added[k] or 0)
    if prior > 0 then
      local args = {seq, user}
      if (held_base[k] or 0) == 0 and not held_zadded[k] then
        args[3], args[4] = seq, '~' -- the first place, which left no record here
      end
      held_zadded[k] = true
      if redis.call('ZADD', k, unpack(args)) > 0 and prior >= PRICE_HELD_CAP then
        redis.call('ZREMRANGEBYRANK', k, 0, -(PRICE_HELD_CAP + 1))
      end
      redis.call('PEXPIRE', k, PRICE_HELD_TTL_MS)
    end
    held_added[k] = (held_added[k] or 0) + 1
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

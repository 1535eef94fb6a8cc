-- enter_defences.lua: enter.lua's defences, call by call, which refuse a
-- call without changing anything for its user: the rate limits per
-- client, network, site and place (LIMITED), one account's one place per
-- queue (OTHER_LINE), and the proof of work or human check the price of
-- its place asks (CHALLENGE, HUMAN). They live in the enter script so
-- that they cost no round trip of their own. b is the batch (enter.lua):
-- its keys, clock, config and answers, and the calls let through.

-- price_for is the price of a place on the networks held_keys names
-- (networks.lua): the arrival pressure and the line's head are read
-- once a batch, and only when a call brings its networks.
local function price_for(b, held_keys)
  local p = b.price
  if not p.floor_read then
    p.floor, p.floor_read = held_floor(b.k.waiting, b.k.held, b.in_draw, b.cfg.opens_at_ms, b.now), true
    p.pressure = arrival_pressure(b.k.arriving, b.now, p.calm)
  end
  return price_of(held_keys, p.floor, p.bits, p.pressure)
end

-- next_key returns the batch's next per-call key when the call uses it
-- (n > 0).
local function next_key(b, n)
  if n > 0 then
    b.key = b.key + 1
    return KEYS[b.key]
  end
end

-- check_limits charges call i's buckets (the costs for its client, its
-- network, its site and its place, the header's order), answering
-- LIMITED when one is over: every call let through the limits counts
-- against them, whatever comes of it. The keys are taken in that order.
local function check_limits(b, i, c_cost, n_cost, s_cost, p_cost)
  if c_cost + n_cost + s_cost + p_cost == 0 then
    return true -- the usual call: the local stage let it through (local.go)
  end
  local client, network, site, place = next_key(b, c_cost), next_key(b, n_cost), next_key(b, s_cost), next_key(b, p_cost)
  local l = b.limits
  local wait = take_all({
    {client, l.client[1], l.client[2], c_cost},
    {network, l.network[1], l.network[2], n_cost},
    {site, l.site[1], l.site[2], s_cost},
    {place, l.place[1], l.place[2], p_cost},
  }, b.now)
  if wait > 0 then
    b.out[b.head + 2 * i - 1] = LIMITED
    b.out[b.head + 2 * i] = math.ceil(wait)
    return false
  end
  return true
end

-- One account, one place per queue: an account's enter is refused
-- (OTHER_LINE) while the same account holds a place in another of the
-- queue's lines, waiting, set aside at the head, in a draw, or admitted
-- and active (the entered ZSET is the queue's, every line's). A refusal,
-- not a move: arrival numbers are per line, so a place moved to another
-- line could not keep its arrival order.

-- other_line returns the index of the first of others ({lane, member,
-- waiting, held, draw}) that holds member, 0 when a lane of the lanes
-- SET (one that may hold places) is neither this line's nor among
-- others (the caller read the lanes before a change), or nil. The lanes
-- SET is read once a batch (b.lanes_held), and only for an account's
-- enter.
local function other_line(b, others)
  if not b.lanes_held then
    b.lanes_held = redis.call('SMEMBERS', b.k.lanes)
  end
  local named = {[LANE] = true}
  for _, o in ipairs(others) do
    named[o.lane] = true
  end
  for _, lane in ipairs(b.lanes_held) do
    if not named[lane] then
      return 0
    end
  end
  for k, o in ipairs(others) do
    local admitted = tonumber(redis.call('ZSCORE', b.k.entered, o.member))
    if redis.call('ZSCORE', o.waiting, o.member) or redis.call('ZSCORE', o.held, o.member) or
        redis.call('SISMEMBER', o.draw, o.member) == 1 or (admitted and admitted > b.now - b.cfg.session_ttl_ms) then
      return k
    end
  end
  return nil
end

-- others_of reads the other lines an account's enter names: their
-- lanes and members from asks' tail, their keys from the call's next
-- keys (nil when it names none).
local function others_of(b, n, tail)
  if n == 0 then
    return nil
  end
  local others = {}
  for lane, member in string.gmatch(tail, '\n([%w-]*) ([^\n]+)') do
    others[#others + 1] = {lane = lane, member = member, waiting = next_key(b, 1), held = next_key(b, 1),
      draw = next_key(b, 1)}
  end
  return others
end

-- pass_defences puts each call through the defences (its buckets, then
-- its proof of work), filling the batch's calls let through: b.users and
-- b.slot, their user ids and their index among the calls (where their
-- answer goes), b.gens, their place credentials' generations; and per
-- call i, b.proof_key[i], its proof of work's key when it brought one,
-- and b.held[i], its networks' held keys when it brought them. A call
-- refused is answered here.
local function pass_defences(b)
  local out, head, now, cfg, price = b.out, b.head, b.now, b.cfg, b.price
  local users, slot, gens, proof_key, held = b.users, b.slot, b.gens, b.proof_key, b.held
  for i = 1, b.calls do
    local asks = ARGV[b.args + 2 * i]
    local passed, proved, expires, gen, flags = true, 0, 0, -1, 0
    if asks ~= '' then
      -- One match, no table: this runs for every call of a batch.
      local c_cost, n_cost, s_cost, p_cost, d, e, g, counted, seen1, seen2, f, lines, tail = string.match(asks,
        '^(%d+) (%d+) (%d+) (%d+) (%d+) (%-?%d+) (%-?%d+) (%d) (%d+) (%d+) (%d) ?(%d*)(.*)$')
      proved, expires, gen, flags = tonumber(d), tonumber(e), tonumber(g), tonumber(f)
      passed = check_limits(b, i, tonumber(c_cost), tonumber(n_cost), tonumber(s_cost), tonumber(p_cost))
      proof_key[i] = next_key(b, proved)
      if counted ~= '0' then
        held[i] = {{next_key(b, 1), tonumber(seen1)}}
        if counted == '2' then
          held[i][2] = {next_key(b, 1), tonumber(seen2)}
        end
      end
      local others = others_of(b, tonumber(lines) or 0, tail) -- the lines an account's enter names
      if passed and others then
        local line = other_line(b, others)
        if line then
          out[head + 2 * i - 1] = OTHER_LINE
          out[head + 2 * i] = line
          passed = false
        end
      end
    end
    if passed then
      -- The queue's own difficulty, or the price of a place on the
      -- caller's network when that is higher, up to the ceiling; or a
      -- human check (price_need).
      local need = price_need(cfg.challenge_difficulty, held[i] and price_for(b, held[i]), flags % 2 == 1,
        flags >= 2, cfg.human_check, price.ceiling, price.human)
      if need == nil then
        out[head + 2 * i - 1] = HUMAN
        out[head + 2 * i] = 0
      elseif need > 0 and (proved < need or expires <= now or
          not redis.call('SET', proof_key[i], 1, 'NX', 'PX', expires - now)) then
        out[head + 2 * i - 1] = CHALLENGE
        out[head + 2 * i] = need
      else
        users[#users + 1] = ARGV[b.args + 2 * i - 1]
        slot[#users] = i
        gens[#users] = gen
        if held[i] then
          price_paid(held[i])
        end
      end
    end
  end
end

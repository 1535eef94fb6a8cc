-- tick_lines.lua: the tick's lines, their parts of the room and their
-- rates. The lines are the general lane's (the queue's own keys, "") and
-- one per lane of the caller's reading: the configured lanes (the config's
-- "lanes", JSON) and any lane of the lanes SET still holding places. A
-- lane removed is served at the share it had when it went (the tick
-- HASH's "share:<lane>", lanes_replaced in common_settings.lua) until it
-- is empty, then leaves the SET and is forgotten (forget_lanes): its
-- people keep their arrival order against everyone else, as they would
-- have had it stayed. A line is a table of its keys, its name and its
-- share; the general lane's share is what the lanes leave.

-- configured_lanes reads the configured lanes: raw, the config's JSON as
-- stored ("" for none), and shares, each lane's share by name.
local function configured_lanes(config_key)
  local raw = redis.call('HGET', config_key, 'lanes') or ''
  local shares = {}
  if raw ~= '' then
    for _, l in ipairs(cjson.decode(raw)) do
      shares[l.name] = l.share
    end
  end
  return {raw = raw, shares = shares}
end

-- lines_now returns the lines, or nil when read (the caller's reading,
-- ","-joined) is not the configured lanes and the SET's, sorted: the
-- caller read them before a change. q are the queue's keys (the general
-- lane's), the lanes' own follow KEYS[fixed], LANE_KEYS a lane.
local LANE_KEYS = 10
local function lines_now(q, fixed, configured, read)
  local names = redis.call('SMEMBERS', q.lanes)
  local seen = {}
  for _, n in ipairs(names) do
    seen[n] = true
  end
  for n in pairs(configured.shares) do
    if not seen[n] then
      names[#names + 1] = n
    end
  end
  table.sort(names)
  if table.concat(names, ',') ~= read then
    return nil
  end
  local general = {name = '', waiting = q.waiting, heard = q.heard, held = q.held, stale = q.stale, draw = q.draw,
    draw_keys = q.draw_keys, draw_list = q.draw_list, seq = q.seq, arrivals = q.arrivals, share = 1, index = 0}
  local lines = {general}
  local removed, kept = 0, 0
  for i, n in ipairs(names) do
    local k = fixed + LANE_KEYS * (i - 1)
    local share, gone = configured.shares[n], configured.shares[n] == nil
    if gone then
      share = tonumber(redis.call('HGET', q.tick, 'share:' .. n)) or 0
      removed = removed + share
    else
      kept = kept + share
    end
    lines[#lines + 1] = {name = n, waiting = KEYS[k + 1], heard = KEYS[k + 2], held = KEYS[k + 3], stale = KEYS[k + 4],
      draw = KEYS[k + 5], seq = KEYS[k + 6], arrivals = KEYS[k + 7], history = KEYS[k + 8],
      draw_keys = KEYS[k + 9], draw_list = KEYS[k + 10],
      share = share, gone = gone, index = i}
  end
  -- The lanes removed keep their shares first (their people were
  -- promised them); the configured lanes' shares give way to fit in what
  -- is left, in proportion, until the removed lanes are empty.
  local removed_scale = removed > 1 and 1 / removed or 1
  local kept_scale = 1
  if kept > 0 and kept > 1 - removed * removed_scale then
    kept_scale = (1 - removed * removed_scale) / kept
  end
  for i = 2, #lines do
    local line = lines[i]
    line.share = line.share * (line.gone and removed_scale or kept_scale)
    general.share = general.share - line.share
  end
  general.share = math.max(0, general.share)
  return lines
end

-- field is a line's own field name in the tick HASH: name for the general
-- lane, name:lane for a lane.
local function field(line, name)
  if line.name == '' then
    return name
  end
  return name .. ':' .. line.name
end

-- The split. Each lane holds a credit c (the tick HASH's
-- "credit:<lane>", in [0, 1)): the fraction of a place it is owed. An
-- applied tick with room places to give adds share x room to it and
-- gives the lane its whole places; the general lane gets the rest. So a
-- lane's admissions up to any tick are floor(its share of all the room
-- so far + a constant): over any run of intervals, whichever, it gets
-- its share of their room within one place (floor(x + w) - floor(x) is
-- floor(w) or ceil(w)). The general lane, the rest, is as exact with one
-- lane, and within as many places as there are lanes with more (no rule
-- can hold every one of three or more lines within one place over every
-- run: Fraenkel's balanced sequences). The lanes' whole places can
-- exceed the room only when the general lane's part of it is less than
-- the lanes less one (several lanes' fractions coming due together): the
-- least owed then waits a tick, within two places of its share. A lane
-- is charged its allocation whether or not it could use it: a line with
-- fewer waiting gives the rest to the others in the same interval
-- (spare, move_lines), which are not charged for it, so neither an idle
-- lane banks its share nor a busy one pays back what nobody else wanted.
-- A change of the configured lanes starts every credit at 0 (credit_for:
-- the configuration the credits are for, configured_raw).
local function split(tick_key, room, lines, configured_raw)
  local fresh = redis.call('HGET', tick_key, 'credit_for') ~= configured_raw
  local given = 0
  for i = 2, #lines do
    local line = lines[i]
    local c = 0
    if not fresh then
      c = tonumber(redis.call('HGET', tick_key, field(line, 'credit'))) or 0
    end
    c = c + line.share * room
    line.alloc = math.floor(c + 1e-9)
    line.credit = math.max(0, c - line.alloc)
    given = given + line.alloc
  end
  while given > room do
    local least = nil
    for i = 2, #lines do
      if lines[i].alloc > 0 and (not least or lines[i].credit < least.credit) then
        least = lines[i]
      end
    end
    least.alloc, least.credit, given = least.alloc - 1, least.credit + 1, given - 1
  end
  lines[1].alloc, lines[1].credit = room - given, 0
  for i = 2, #lines do
    redis.call('HSET', tick_key, field(lines[i], 'credit'), string.format('%.17g', lines[i].credit))
  end
  redis.call('HSET', tick_key, 'credit_for', configured_raw)
end

-- set_rates leaves each line's expected admissions per interval in the
-- tick HASH ("rate:<lane>", common_config.lua's line_rate, for the ETA of
-- its places): what it got when people are left in it, else its
-- allocation and the room nobody used; never below 1. While nothing can
-- be admitted (paused, at the cap) its share of the budget. Without lanes
-- there are no rates: every script's ETA uses the budget, as before lanes.
local function set_rates(tick_key, room, lines, moved, budget)
  if #lines == 1 then
    redis.call('HDEL', tick_key, 'rate:')
    return
  end
  for _, line in ipairs(lines) do
    local r = math.floor(line.share * budget)
    if room > 0 then
      r = #line.admit
      if redis.call('ZCARD', line.waiting) == 0 then
        r = (line.alloc or 0) + room - moved
      end
    end
    line.rate = math.max(1, r)
    redis.call('HSET', tick_key, 'rate:' .. line.name, line.rate)
  end
end

-- forget_lanes takes out of the lanes SET (lanes_key) each lane no longer
-- configured whose line is empty, with its fields in the tick HASH (its
-- share when removed included).
local function forget_lanes(lanes_key, tick_key, lines, configured)
  for _, line in ipairs(lines) do
    if line.name ~= '' and not configured.shares[line.name] and redis.call('ZCARD', line.waiting) == 0 and
        redis.call('ZCARD', line.held) == 0 and redis.call('SCARD', line.draw) == 0 and
        redis.call('ZCARD', line.draw_keys) == 0 then
      redis.call('SREM', lanes_key, line.name)
      redis.call('HDEL', tick_key, 'rate:' .. line.name, 'credit:' .. line.name, 'share:' .. line.name)
    end
  end
end

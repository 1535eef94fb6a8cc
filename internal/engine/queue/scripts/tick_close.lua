-- tick_close.lua: what the tick does before it moves anyone: place a
-- scheduled opening's draw, close the interval the last tick opened,
-- purge the ended sessions, and work out the new interval's budget and
-- the room it leaves for moves.

-- A scheduled opening's draw (docs/DRAW.md). Until the opening, the
-- seed of its draw is sealed: only its SHA-256 (draw_commitment) is in
-- the config, the seed itself in a key of its own (rediskeys.DrawSeed)
-- that nothing answering reads; each participant joined under its draw
-- key, HMAC-SHA256(seed, user id), which the enter's caller computed
-- (Lua has no HMAC-SHA256: draw.go says why it is not done here). At the
-- opening the tick reveals the seed and places the participants in the
-- order of their keys, lowest first, a bounded batch a call.

-- DRAW_BASE is the score of a line's first drawn place: the i-th place
-- of a draw (from 1) scores DRAW_BASE + i - 1, below every arrival
-- number (which are positive), and a drawn place's score says its place
-- in the draw (status.lua answers it; Go reads the place from it).
local DRAW_BASE = -4503599627370496 -- -2^52

-- reveal_draw ends the seal at the opening (opens_at, or now when the
-- operator cleared it: a sealed draw is never discarded): the seed and its
-- commitment go to the tick HASH's record of the last draw, which is
-- public, with its lines (the general lane's and each lane's holding
-- participants, "draw_lines": the lanes, ","-joined) and their places so
-- far (0); the last draw's list goes. Its placing starts
-- ("draw_placing" until every participant is placed).
local function reveal_draw(q, lines, now, opens_at)
  local seed = redis.call('GET', q.draw_seed) or ''
  local commitment = redis.call('HGET', q.config, 'draw_commitment') or ''
  local lanes = {}
  for _, line in ipairs(lines) do
    redis.call('HDEL', q.tick, field(line, 'draw_n'))
    redis.call('UNLINK', line.draw_list)
    if line.name ~= '' and redis.call('ZCARD', line.draw_keys) + redis.call('SCARD', line.draw) > 0 then
      lanes[#lanes + 1] = line.name
    end
  end
  redis.call('HSET', q.tick, 'draw_for', opens_at > 0 and opens_at or now, 'draw_seed', seed,
    'draw_commitment', commitment, 'draw_count', 0, 'draw_placing', 1, 'draw_lines', table.concat(lanes, ','))
  redis.call('DEL', q.draw_seed)
  redis.call('HDEL', q.config, 'draw_id', 'draw_commitment')
end

-- place_batch places at most max of line's participants: those of the
-- draw keys ZSET first, lowest key first (ZPOPMIN of equal scores pops
-- the least member), each whose user is still in the draw SET (a member
-- whose user left is skipped) at the line's next drawn place, its entry
-- (key and id hash) appended to the draw's list; then, once those are
-- all placed, any participant without a key (one who joined before this
-- version: placed behind, in SPOP's order, and not listed). Returns how
-- many it placed.
local function place_batch(tick_key, line, max)
  local n = tonumber(redis.call('HGET', tick_key, field(line, 'draw_n'))) or 0
  local placed = 0
  local popped = redis.call('ZPOPMIN', line.draw_keys, max)
  local users, entries = {}, {}
  if #popped > 0 then
    for i = 1, #popped, 2 do
      users[#users + 1] = string.sub(popped[i], 65)
      entries[#entries + 1] = string.sub(popped[i], 1, 64)
    end
  else
    users = redis.call('SPOP', line.draw, max)
  end
  for i = 1, #users, 500 do
    local last = math.min(i + 499, #users)
    local member = #popped > 0 and redis.call('SMISMEMBER', line.draw, unpack(users, i, last)) or nil
    local args, list, gone = {}, {}, {}
    for j = i, last do
      if not member or member[j - i + 1] == 1 then
        args[#args + 1] = DRAW_BASE + n + placed
        args[#args + 1] = users[j]
        gone[#gone + 1] = users[j]
        if member then
          list[#list + 1] = entries[j]
        end
        placed = placed + 1
      end
    end
    if #args > 0 then
      redis.call('ZADD', line.waiting, unpack(args))
      if member then
        redis.call('SREM', line.draw, unpack(gone))
      end
    end
    if #list > 0 then
      redis.call('RPUSH', line.draw_list, unpack(list))
    end
  end
  redis.call('HSET', tick_key, field(line, 'draw_n'), n + placed)
  return placed
end

-- place_draw places a scheduled opening's draw. From opens_at, every call
-- (not just the interval's tick) reveals the sealed seed if any
-- (reveal_draw), then places a bounded batch (max a line) of each line's
-- participants (place_batch): a uniformly random order, since the keys are
-- HMAC-SHA256 under a seed nobody knew, ahead of everyone who arrived
-- after opens_at. Nobody is admitted until every participant is placed,
-- so it returns true while some are left. (A draw left behind by an
-- opening the operator cleared is placed too.)
local function place_draw(q, lines, now, cfg, max)
  if cfg.opens_at_ms > now then
    return false
  end
  if cfg.draw_id then
    reveal_draw(q, lines, now, cfg.opens_at_ms)
  end
  local left, worked = false, cfg.draw_id ~= nil
  for _, line in ipairs(lines) do
    if redis.call('SCARD', line.draw) > 0 or redis.call('ZCARD', line.draw_keys) > 0 then
      worked = true
      if not redis.call('HGET', q.tick, 'draw_placing') then
        -- A draw with no seed sealed (its participants joined before this
        -- version): recorded, with no seed, as the old draws were.
        redis.call('HSET', q.tick, 'draw_for', cfg.opens_at_ms > 0 and cfg.opens_at_ms or now, 'draw_seed', '',
          'draw_commitment', '', 'draw_count', 0, 'draw_placing', 1, 'draw_lines', '')
      end
      local placed = place_batch(q.tick, line, max)
      redis.call('HINCRBY', q.tick, 'draw_count', placed)
      redis.call('HINCRBY', q.tick, field(line, 'placed'), placed) -- arrivals, for the history
      left = left or redis.call('SCARD', line.draw) > 0 or redis.call('ZCARD', line.draw_keys) > 0
    end
  end
  if worked and not left then
    redis.call('HDEL', q.tick, 'draw_placing')
  end
  return left
end

-- last_tick returns the tick HASH's fields close_interval reads, with
-- each line's arrival counter now and its own fields (line.state) read
-- into the lines, and the direct admissions since the last tick.
local function last_tick(tick_key, lines)
  local state = redis.call('HMGET', tick_key, 'at_ms', 'moved', 'direct', 'abandoned', 'seq_at', 'placed', 'budget')
  for _, line in ipairs(lines) do
    line.state = redis.call('HMGET', tick_key, field(line, 'moved'), field(line, 'abandoned'), field(line, 'seq_at'),
      field(line, 'placed'))
    line.seq_now = tonumber(redis.call('GET', line.seq)) or 0
  end
  return state, tonumber(state[3]) or 0
end

-- close_interval closes the interval the previous tick opened (state:
-- the tick HASH's fields, last_tick) and returns how many it
-- admitted: the users that tick moved plus those who entered directly on
-- its leftover tokens, which is never more than refill_size. Before the
-- very first tick, users may have entered on the initial full bucket:
-- that counts as an interval too. Its arrivals are the arrival numbers
-- given since the last tick in every line (seq_at: re-entries count,
-- refusals do not), the direct admissions and an opening's participants
-- placed in the lines; enter.lua pays nothing for the count. Each lane's
-- own history gets the same entry for its line (its direct admissions
-- are the queue's only). The history keeps its newest keep entries.
local function close_interval(q, state, direct, lines, now, cfg, keep)
  local admitted = (tonumber(state[2]) or 0) + direct
  if not (state[1] or admitted > 0) then
    return admitted
  end
  local started = tonumber(state[1]) or (now - cfg.refill_interval_ms)
  local active = active_count(q.entered, now, cfg.session_ttl_ms)
  local waiting, arrivals = 0, direct
  for _, line in ipairs(lines) do
    local s = line.state
    line.waiting_before = redis.call('ZCARD', line.waiting)
    line.arrived = line.seq_now - (tonumber(s[3]) or line.seq_now) + (tonumber(s[4]) or 0)
    waiting = waiting + line.waiting_before
    arrivals = arrivals + line.arrived
    if line.history then
      redis.call('RPUSH', line.history, string.format('%d:%d:%d:%d:%d:%d:%d', started, tonumber(s[1]) or 0,
        line.waiting_before, tonumber(s[2]) or 0, line.arrived, active, tonumber(state[7]) or cfg.refill_size))
      redis.call('LTRIM', line.history, -keep, -1)
    end
  end
  -- The seventh field is the interval's budget; readers take
  -- entries of three to six fields too (keys.go, history).
  redis.call('RPUSH', q.history, string.format('%d:%d:%d:%d:%d:%d:%d', started, admitted, waiting,
    tonumber(state[4]) or 0, arrivals, active, tonumber(state[7]) or cfg.refill_size))
  redis.call('LTRIM', q.history, -keep, -1)
  return admitted
end

-- purge_expired purges expired sessions, first, so the count of active
-- users below is what the cap sees (which does not depend on the purge
-- anyway). The entered set is ordered by admission time (a sliding
-- session's by its last renewal), so the expired ones come first; a
-- bounded batch (max) keeps each tick short. Each is remembered as
-- expired, for the user who asks. A session is over at admission + ttl,
-- the moment status.lua and active_count stop counting it (score <= now -
-- ttl): purged from then. Returns how many it purged and their times
-- inside (stat_round).
local function purge_expired(q, now, ttl, max)
  local ended = redis.call('ZRANGE', q.entered, '-inf', now - ttl, 'BYSCORE', 'LIMIT', 0, max, 'WITHSCORES')
  local expired, expired_at = {}, {}
  for i = 1, #ended, 2 do
    expired[#expired + 1] = ended[i]
    expired_at[#expired] = tonumber(ended[i + 1])
  end
  local purged = #expired
  -- Their time inside ran from the admission's start (a renewed sliding
  -- session's is in the admitted HASH) to the session's end, ttl after its
  -- score (the admission, or the last renewal).
  local inside = {}
  for i = 1, purged, 1000 do
    local last = math.min(i + 999, purged)
    local starts = redis.call('HMGET', q.admitted, unpack(expired, i, last))
    for j = i, last do
      local start = tonumber(starts[j - i + 1]) or expired_at[j]
      inside[#inside + 1] = stat_round(expired_at[j] + ttl - start)
    end
    redis.call('ZREM', q.entered, unpack(expired, i, last))
    redis.call('HDEL', q.admitted, unpack(expired, i, last))
  end
  mark_gone(q.gone, 'expired', expired, now)
  emit(q.events, q.config, 'expired', expired, now)
  return purged, inside
end

-- adapt_budget returns the interval's budget and 1 if it stored a
-- proposed one. The origin's health drives the rate: a replica
-- proposes the effective refill internal/ops/autorate worked out from the
-- budget it read (based_on); stored (within [min_refill_size,
-- refill_size], interval_budget) only while the controller is on and
-- that reading is still the budget (cfg.budget): a compare-and-set, so a
-- proposal from a stale reading, or a second replica's for the same
-- interval, changes nothing.
local function adapt_budget(config_key, cfg, proposed, based_on)
  if proposed and proposed > 0 and based_on == cfg.budget and cfg.adapt_enabled == 1 then
    local b = interval_budget(cfg.refill_size, true, proposed, cfg.min_refill_size)
    redis.call('HSET', config_key, 'refill_effective', b)
    return b, 1
  end
  return cfg.budget, 0
end

-- room_for_moves is how many this tick may admit: the budget, none while
-- paused, and no more than the cap on active users leaves room for.
local function room_for_moves(entered_key, now, cfg, budget)
  if cfg.paused == 1 then
    return 0
  elseif cfg.max_active > 0 then
    return math.min(budget, math.max(0, cfg.max_active - active_count(entered_key, now, cfg.session_ttl_ms)))
  end
  return budget
end

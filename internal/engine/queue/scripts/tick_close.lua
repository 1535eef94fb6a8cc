-- tick_close.lua: what the tick does before it moves anyone: place a
-- scheduled opening's draw, close the interval the last tick opened,
-- purge the ended sessions, and work out the new interval's budget and
-- the room it leaves for moves.

-- place_draw places a scheduled opening's draw. From opens_at, every call
-- (not just the interval's tick) places a bounded batch (max a line) of
-- the pre-queue's participants in each line at draw_key(seed, user): a
-- uniformly random order, ahead of everyone who arrived after opens_at.
-- The first such call records its fresh seed (with draw_for = the
-- opening), so the draw can be audited; every line's draw uses it. Nobody
-- is admitted until every participant is placed, so it returns true while
-- some are left. (A draw left behind by an opening the operator cleared
-- is placed too.)
local function place_draw(tick_key, lines, now, opens_at, fresh_seed, max)
  if opens_at > now then
    return false
  end
  local left = false
  for _, line in ipairs(lines) do
    if redis.call('SCARD', line.draw) > 0 then
      local d = redis.call('HMGET', tick_key, 'draw_for', 'draw_seed')
      local seed = d[2]
      if tonumber(d[1]) ~= opens_at then
        seed = fresh_seed
        redis.call('HSET', tick_key, 'draw_for', opens_at, 'draw_seed', seed, 'draw_count', 0)
      end
      local batch = redis.call('SPOP', line.draw, max)
      for i = 1, #batch, 500 do
        local args = {}
        for j = i, math.min(i + 499, #batch) do
          args[#args + 1] = draw_key(seed, batch[j])
          args[#args + 1] = batch[j]
        end
        redis.call('ZADD', line.waiting, unpack(args))
      end
      redis.call('HINCRBY', tick_key, 'draw_count', #batch)
      redis.call('HINCRBY', tick_key, field(line, 'placed'), #batch) -- arrivals, for the history
      left = left or redis.call('SCARD', line.draw) > 0
    end
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

-- tick.lua: the refill tick, applied at most once per interval and never
-- sooner than an interval after the last, on the Redis clock, however
-- many replicas call it (docs/ARCHITECTURE.md, "The tick, exactly once
-- per interval", and "Why ticks are spaced: the (k + 1) × refill bound").
-- Its steps are the tick_*.lua files scripts.go puts before this one.
--
-- KEYS[1..6]   waiting ZSET, entered ZSET, tokens STRING, config HASH, tick HASH, history LIST
-- KEYS[7..12]  heard ZSET, gone ZSET, draw SET, admitted HASH, events STREAM, seq STRING (read only)
-- KEYS[13..19] arrivals ZSET, samples LIST, inside HASH, held ZSET, stale ZSET, lanes SET, schedule STRING
-- KEYS[20..22] draw keys ZSET, draw list LIST, the sealed draw's seed STRING (docs/DRAW.md)
-- KEYS[23..]   per lane of LANES_READ, in its order: its waiting, heard, held, stale, draw, seq,
--              arrivals, history, draw keys and draw list (rediskeys.Lane); docs/ARCHITECTURE.md,
--              "Keys", for each key
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then "" (common_config.lua)
-- ARGV[DEFAULTS + 1..DEFAULTS + 4] bounds: sessions purged, history entries kept, abandoned
--              places dropped (a line), a draw's places a call (a line)
-- ARGV[DEFAULTS + 5..DEFAULTS + 6] a proposed refill_effective ("" or 0: none) and the budget it was
--              based on: stored only if that is still the budget (adapt_budget)
-- ARGV[DEFAULTS + 7] places held a tick (a line)
-- ARGV[DEFAULTS + 8] LANES_READ: the caller's reading of the lanes, sorted, ","-joined
-- ARGV[DEFAULTS + 9] "1" when the caller's tick calls failed since its last that reached
--              Redis, or this is its first: only then is a late tick an outage (outage_grace)
-- Returns, in TICK_* order (common.lua): applied (1, 0, or LANES_CHANGED / WINDOWS_DUE,
-- having changed nothing: call again), moved, waiting, tokens, purged, admitted in the
-- interval that ended, dropped, late (ms after due), until the next (ms), budget, adapted,
-- the lanes n; then moved and waiting of each of the n lanes; then groups of four
-- {STAT_* kind, value_ms, count, line (0: general, i: the i-th lane)}. Unapplied: 0s but TICK_UNTIL_NEXT.

local now = now_ms()
local q = {waiting = KEYS[1], entered = KEYS[2], tokens = KEYS[3], config = KEYS[4], tick = KEYS[5],
  history = KEYS[6], heard = KEYS[7], gone = KEYS[8], draw = KEYS[9], admitted = KEYS[10], events = KEYS[11],
  seq = KEYS[12], arrivals = KEYS[13], samples = KEYS[14], inside = KEYS[15], held = KEYS[16], stale = KEYS[17],
  lanes = KEYS[18], schedule = KEYS[19], draw_keys = KEYS[20], draw_list = KEYS[21], draw_seed = KEYS[22]}
local FIXED = 22 -- KEYS before the lanes' own
local PURGE_MAX, HISTORY_KEEP, DROP_MAX = tonumber(ARGV[DEFAULTS + 1]), tonumber(ARGV[DEFAULTS + 2]), tonumber(ARGV[DEFAULTS + 3])
local DRAW_MAX = tonumber(ARGV[DEFAULTS + 4])
local PROPOSED, BASED_ON = tonumber(ARGV[DEFAULTS + 5]), tonumber(ARGV[DEFAULTS + 6])
local HOLD_MAX, LANES_READ, WAS_AWAY = tonumber(ARGV[DEFAULTS + 7]), ARGV[DEFAULTS + 8], ARGV[DEFAULTS + 9] == '1'

-- The gone records are trimmed at most this many a tick (trim_below,
-- common_places.lua: a ZREMRANGEBYSCORE has no LIMIT), the rest by the
-- ticks after, so that a burst of them never makes one tick long. A tick
-- itself writes at most PURGE_MAX + DROP_MAX (2,000) gone records a line,
-- and mark_gone retires old ones as fast as leaves and dones write new ones.
local GONE_TRIM_MAX = 10000

-- not_applied is the reply of a call that applies no tick: applied (0, or
-- a reason to call again) and the time until the next tick.
local function not_applied(applied, until_next)
  local out = {}
  for i = 1, TICK_LANES do
    out[i] = 0
  end
  out[TICK_APPLIED], out[TICK_UNTIL_NEXT] = applied, until_next
  return out
end

-- leave_tokens sets and returns the tokens left for direct entries until
-- the next tick: the budget (refill_size, or the effective refill while
-- adapting) less the users moved, whatever the last interval left
-- (unused tokens do not carry over), so that the interval this tick
-- opens admits at most the budget. (Direct entries obey the pause and
-- the cap too: enter.lua.)
local function leave_tokens(tokens_key, budget, moved)
  local tokens = budget - moved
  redis.call('SET', tokens_key, tokens)
  return tokens
end

-- record_tick records the tick in the tick HASH: the next tick a full
-- interval from now, whenever this one was due (t: now, interval, budget,
-- moved, dropped); min_next_ms is an older version's (next_tick_at). Each
-- line's arrival counter, and a lane's moves and drops, are its own fields.
local function record_tick(tick_key, lines, t)
  redis.call('HDEL', tick_key, 'min_next_ms')
  redis.call('HSET', tick_key,
    'next_at_ms', t.now + t.interval,
    'at_ms', t.now,
    'moved', t.moved,
    'abandoned', t.dropped,
    'direct', 0,
    'budget', t.budget)
  for _, line in ipairs(lines) do
    redis.call('HSET', tick_key, field(line, 'seq_at'), line.seq_now, field(line, 'placed'), 0)
    if line.name ~= '' then
      redis.call('HSET', tick_key, field(line, 'moved'), #line.admit, field(line, 'abandoned'), line.dropped)
    end
  end
end

-- applied_reply is the reply of an applied tick (r: its counts by name,
-- lines, groups: what it measured), in TICK_* order.
local function applied_reply(r, lines, groups)
  local out = {}
  out[TICK_APPLIED] = 1
  out[TICK_MOVED] = r.moved
  out[TICK_WAITING] = r.waiting
  out[TICK_TOKENS] = r.tokens
  out[TICK_PURGED] = r.purged
  out[TICK_ADMITTED] = r.admitted
  out[TICK_ABANDONED] = r.abandoned
  out[TICK_LATE] = r.late
  out[TICK_UNTIL_NEXT] = r.until_next
  out[TICK_BUDGET] = r.budget
  out[TICK_ADAPTED] = r.adapted
  out[TICK_LANES] = #lines - 1
  for i = 2, #lines do
    out[#out + 1] = #lines[i].admit
    out[#out + 1] = lines[i].left
  end
  for _, v in ipairs(groups) do
    out[#out + 1] = v
  end
  return out
end

-- The body: each step one call, in order; the script, not any one step,
-- is atomic.
if windows_due(q.schedule, q.tick, now) then
  return not_applied(WINDOWS_DUE, 0)                                      -- windows.lua first
end
local cfg = queue_config(q.config)
local due = next_tick_at(q.tick)
local configured = configured_lanes(q.config)
local lines = lines_now(q, FIXED, configured, LANES_READ)
if not lines then
  return not_applied(LANES_CHANGED, 0)                                    -- read the lanes again
end
if cfg.closed_at_ms then
  local _, more = drop_closed(q, lines, now, DRAW_MAX)                    -- sold out: the line goes
  if more then
    return not_applied(0, 0)                                              -- the next calls go on dropping
  end
  cfg.paused = 1                                                          -- and nobody is admitted
end
if place_draw(q, lines, now, cfg, DRAW_MAX) then
  return not_applied(0, 0)                                                -- the next calls go on placing it
end
if due and now < due then
  return not_applied(0, due - now)
end
local state, direct = last_tick(q.tick, lines)                            -- what the last tick left
local admitted = close_interval(q, state, direct, lines, now, cfg, HISTORY_KEEP)
local purged, inside = purge_expired(q, now, cfg.session_ttl_ms, PURGE_MAX)
local budget, adapted = adapt_budget(q.config, cfg, PROPOSED, BASED_ON)
local room = room_for_moves(q.entered, now, cfg, budget)
if #lines > 1 then
  split(q.tick, room, lines, configured.raw)                              -- each line's part
end
local mv = {now = now, abandon_after = cfg.abandon_after_ms, grace = outage_grace(q.tick, now, due, WAS_AWAY, cfg),
  drop_max = DROP_MAX, hold_max = HOLD_MAX, dropped = {}}
local all = move_lines(room, lines, mv)                                   -- move the heads
admit(q, all, mv.dropped, now)
trim_below(q.gone, now - GONE_KEEP_MS, GONE_TRIM_MAX)                     -- forget the gone past an hour
local tokens = leave_tokens(q.tokens, budget, #all)
set_rates(q.tick, room, lines, #all, budget)                              -- the lines' rates
local groups = line_statistics(q, direct, lines, inside, now)
local left = 0
for _, line in ipairs(lines) do
  line.left = checkpoint(line, now, line.rate or budget, cfg.refill_interval_ms)
  left = left + line.left
end
forget_lanes(q.lanes, q.tick, lines, configured)
record_tick(q.tick, lines, {now = now, interval = cfg.refill_interval_ms, budget = budget, moved = #all, dropped = #mv.dropped})
return applied_reply({moved = #all, waiting = left, tokens = tokens, purged = purged, admitted = admitted,
  abandoned = #mv.dropped, late = due and now - due or 0, until_next = cfg.refill_interval_ms, budget = budget,
  adapted = adapted}, lines, groups)

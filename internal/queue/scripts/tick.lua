-- tick.lua: the refill tick. Every replica calls it several times per
-- interval, and again the moment the next tick is due (the scheduler reads
-- TICK_UNTIL_NEXT); it does its work only when due. "next_at_ms" in the
-- tick HASH remembers when that is (next_tick_at, common.lua): one full
-- refill interval after the last applied tick, on the Redis clock. So the
-- tick is idempotent, a second call from any replica changing nothing
-- until then, and two ticks are never closer than an interval.
--
-- That spacing is what bounds the rate at the order page. Each
-- tick opens an interval that admits at most refill_size: the users it
-- moves plus those who then enter directly on the tokens it leaves
-- (enter.lua); before a queue's first tick the initial full bucket is
-- such an interval. A window [a, a + k x interval) of the Redis clock
-- meets at most k + 1 of them, the one in progress at a and at most k
-- ticks at least an interval apart, so it admits at most (k + 1) x
-- refill_size (refill_size as it was at each of those ticks: a raise
-- counts from the next tick, a lowering caps the tokens left at once),
-- however late or from whichever replica the ticks come. A late tick
-- delays the next one by as much: ticks realign by being delayed, never
-- by a shorter interval, since a tick sooner than an interval after a
-- late one would let in, within one interval, the direct entries just
-- before the late tick, its moves and its own. Missed intervals (all
-- replicas down) are not replayed either: that would send a burst to the
-- order page.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- KEYS[3] -> tokens  (STRING)
-- KEYS[4] -> config  (HASH)
-- KEYS[5] -> tick    (HASH: next_at_ms, at_ms/moved of the last applied
--                     tick; enter.lua counts direct admissions in "direct")
-- KEYS[6] -> history (LIST, one entry per ended interval, oldest first; the
--                     format is documented once, in keys.go (history))
-- KEYS[7] -> heard   (ZSET member=user, score=when last heard)
-- KEYS[8] -> gone    (ZSET member="<reason>:<user>", score=when)
-- KEYS[9] -> draw    (SET of a scheduled opening's participants)
-- KEYS[10] -> admitted (HASH: a renewed sliding session's start, renew.lua)
-- KEYS[11] -> events (STREAM: the webhooks' outbox, emit in common.lua)
-- KEYS[12] -> seq     (STRING arrival counter, read only)
-- KEYS[13] -> arrivals (ZSET member="at_ms:waiting:budget:interval_ms",
--                     score=seq at an applied tick; see "Line statistics")
-- KEYS[14] -> samples (LIST of "at_ms:kind:value_ms:count", STAT_* kinds)
-- KEYS[15] -> inside  (HASH rounded time inside (ms) -> count, done.lua's
--                     since the last tick)
-- KEYS[16] -> held    (ZSET member=user, score=arrival seq: places set
--                     aside at the head until they confirm, see below)
-- KEYS[17] -> stale   (ZSET member=user, score=the highest stale arrival
--                     number of its credentials; trimmed here, see keys.go)
-- KEYS[18] -> lanes  (SET of the lanes that may hold places, enter.lua)
-- KEYS[19] -> schedule (STRING, JSON: the windows, see "Windows" below)
-- KEYS[20..] -> per lane of LANES_READ, in its order, eight keys: its
--            waiting, heard, held, stale, draw, seq, arrivals and history
--            (rediskeys.Lane), of the types of the queue's keys above
-- ARGV[1..DEFAULTS] -> the replica's defaults queue_config reads (common.lua),
--            then "" (the general lane's keys)
-- ARGV[DEFAULTS + 1] -> max expired sessions purged per tick (PURGE_MAX)
-- ARGV[DEFAULTS + 2] -> history length kept (HISTORY_KEEP)
-- ARGV[DEFAULTS + 3] -> max abandoned places dropped per tick (per line; DROP_MAX)
-- ARGV[DEFAULTS + 4] -> a fresh random seed (52 bits), used if this call
--            starts a draw (DRAW_SEED)
-- ARGV[DEFAULTS + 5] -> max participants placed per call while a draw runs
--            (per line; DRAW_MAX)
-- ARGV[DEFAULTS + 6] -> a proposed refill_effective (internal/autorate; ""
--            or 0: none; PROPOSED)
-- ARGV[DEFAULTS + 7] -> the refill_effective (the budget, TICK_BUDGET) it
--            was based on (BASED_ON): stored only if that is still the
--            budget, a compare-and-set, so a proposal from a stale reading,
--            or a second replica's for the same interval, changes nothing
-- ARGV[DEFAULTS + 8] -> max places set aside (held) per tick (per line; HOLD_MAX)
-- ARGV[DEFAULTS + 9] -> the lanes whose keys follow KEYS[19], ","-joined
--            and sorted (LANES_READ): the caller's reading of the
--            configured lanes and the lanes SET (Store.tickLanes); a call
--            whose reading is no longer true changes nothing but the
--            windows and answers TICK_APPLIED -1, to be called again
-- ARGV[DEFAULTS + 10] -> "1" when the calling replica's tick calls failed
--            since its last one that reached Redis, or this is its first
--            ("0" otherwise; WAS_AWAY): only then is a late tick an outage
--            (outage_grace)
-- Returns, in TICK_* order (common.lua): {applied (0|1), moved, waiting,
-- tokens, purged, admitted in the interval that just ended, abandoned
-- places dropped, how late the tick is (ms after it was due, next_at_ms,
-- on the Redis clock: whole intervals missed count too; 0 for a queue's
-- first tick), ms until the next tick is due, the budget of the interval
-- it opens, 1 if it stored the proposed refill_effective}; a call that
-- applies no tick answers 0 for all but TICK_UNTIL_NEXT (0 while a draw is
-- being placed) and the three of the windows (TICK_WINDOW, TICK_WINDOW_AT,
-- and TICK_WINDOW_CHANGES, the one string). An applied tick then adds what it measured, three values
-- a group: {kind (STAT_*), value_ms, count} (see "Line statistics" below).
--
-- The body, at the end, is one call per step: place a draw, close the
-- interval, purge, set the budget, move the head, forget the old gone
-- records, leave the tokens, take the statistics, checkpoint, record the
-- tick. The script, not any one step, is atomic.
local now = now_ms()
local PURGE_MAX, HISTORY_KEEP, DROP_MAX = tonumber(ARGV[DEFAULTS + 1]), tonumber(ARGV[DEFAULTS + 2]), tonumber(ARGV[DEFAULTS + 3])
local DRAW_SEED, DRAW_MAX = ARGV[DEFAULTS + 4], tonumber(ARGV[DEFAULTS + 5])
local PROPOSED, BASED_ON = tonumber(ARGV[DEFAULTS + 6]), tonumber(ARGV[DEFAULTS + 7])
local HOLD_MAX, LANES_READ, WAS_AWAY = tonumber(ARGV[DEFAULTS + 8]), ARGV[DEFAULTS + 9], ARGV[DEFAULTS + 10] == '1'

-- Windows: the schedule (KEYS[19]) is a JSON object
-- {"windows": [{"start_ms", "end_ms", and any of "refill_size",
-- "max_active", "lanes" (a JSON string of lanes, "" for none), "paused"}]},
-- validated and without overlaps (internal/queue schedule.go). Every call
-- (not only the interval's tick) brings the config in line with the
-- window in force on the Redis clock: at a window's start it writes the
-- window's values and remembers, per field, the value before and the
-- value it wrote (the tick HASH's window_saved); at its end it restores a
-- field only if nobody has changed it since: its value is still the one
-- the window wrote, and no person wrote it meanwhile (person_changed,
-- common.lua, drops it from the memory). An operator's emergency change
-- during a window so outlives the window, and a pause a person set during
-- one is never lifted by the schedule (pause_kept). The tick HASH's
-- "window" (the start of the window applied) makes both happen exactly
-- once, whichever replica calls first. Every field whose value a start or
-- an end changes is told to the site as settings_changed with the actor
-- {"kind": "schedule"}, and to the caller with its old and new values
-- (TICK_WINDOW, TICK_WINDOW_CHANGES), which audits it.
local WINDOW_NONE, WINDOW_STARTED, WINDOW_ENDED = 0, 1, 2
local WINDOW_FIELDS = {'refill_size', 'max_active', 'lanes', 'paused'}

-- window_in_force returns the window of the schedule in force now, or nil.
local function window_in_force()
  local raw = redis.call('GET', KEYS[19])
  if not raw then
    return nil
  end
  for _, w in ipairs(cjson.decode(raw).windows or {}) do
    if w.start_ms <= now and now < w.end_ms then
      return w
    end
  end
  return nil
end

-- window_value is the value w sets for field f as the config HASH holds
-- it, or nil when w leaves f alone.
local function window_value(w, f)
  local v = w[f]
  if v == nil or v == cjson.null then
    return nil
  elseif f == 'paused' then
    return v and '1' or '0'
  elseif f == 'lanes' then
    return v
  end
  return string.format('%d', v)
end

-- stored_or_default is a config field's value as the HASH holds it, or
-- (v false: not set) the replica's default in that form: what a
-- settings_changed event carries, as settings.lua's do.
local function stored_or_default(f, v)
  if v then
    return v
  elseif f == 'paused' then
    return '0'
  elseif f == 'lanes' then
    return ''
  end
  return string.format('%d', config_of({})[f]) -- refill_size, max_active
end

-- told is a config field's value (false: not set, the replica's default)
-- as JSON text, the way the admin API and the audit log show it.
local function told(f, v)
  if f == 'paused' then
    return v == '1' and 'true' or 'false'
  elseif f == 'lanes' then
    return (v and v ~= '') and v or '[]'
  end
  return string.format('%d', tonumber(v) or config_of({})[f]) -- refill_size, max_active
end

-- write_field writes config field f (v false: delete it, the default
-- again) and, when that changes the value in force, adds
-- {f, old, new (told's JSON texts), new as stored} to log.
local function write_field(f, v, log)
  local old = redis.call('HGET', KEYS[4], f) or false
  if f == 'lanes' then
    lanes_replaced(KEYS[5], KEYS[18], old, v or '')
  end
  if v then
    redis.call('HSET', KEYS[4], f, v)
  else
    redis.call('HDEL', KEYS[4], f)
  end
  if told(f, old) ~= told(f, v) then
    log[#log + 1] = {f, told(f, old), told(f, v), stored_or_default(f, v)}
  end
end

-- window_event tells the site of the fields a window's start or end
-- changed (log, write_field's), as settings_changed with the schedule as
-- its actor, the values as stored like a person's change; nothing when
-- it changed none.
local function window_event(log)
  if #log == 0 then
    return
  end
  local settings = {}
  for _, c in ipairs(log) do
    settings[c[1]] = c[4]
  end
  emit(KEYS[11], KEYS[4], 'settings_changed', {}, now, cjson.encode(settings), '{"kind":"schedule"}')
end

-- end_window restores each field the window set that nobody has changed
-- since. A memory of the version before (field -> the value before) has
-- no written value to compare with: those fields are restored as then.
local function end_window(log)
  local memory = cjson.decode(redis.call('HGET', KEYS[5], 'window_saved') or '{}')
  for _, f in ipairs(WINDOW_FIELDS) do
    local m = memory[f]
    if type(m) ~= 'table' and m ~= nil then
      m = {was = m}
    end
    if m and (m.set == nil or redis.call('HGET', KEYS[4], f) == m.set) then
      write_field(f, m.was, log)
    end
  end
  redis.call('HDEL', KEYS[5], 'window', 'window_saved')
  window_event(log)
end

-- start_window writes w's values and remembers, per field, the value
-- before and the one written; a pause a person set during a window
-- (pause_kept) is not lifted: that field is left out.
local function start_window(w, log)
  local memory = {}
  local kept = redis.call('HGET', KEYS[5], 'pause_kept') == '1'
  for _, f in ipairs(WINDOW_FIELDS) do
    local v = window_value(w, f)
    if v and not (f == 'paused' and v == '0' and kept and redis.call('HGET', KEYS[4], f) == '1') then
      memory[f] = {was = redis.call('HGET', KEYS[4], f) or false, set = v}
      write_field(f, v, log)
    end
  end
  redis.call('HSET', KEYS[5], 'window', w.start_ms, 'window_saved', next(memory) == nil and '{}' or cjson.encode(memory))
  window_event(log)
end

-- window_changes is the changes of a window's end and of a start, as
-- TICK_WINDOW_CHANGES holds them: {"ended": [...], "started": [...]},
-- each a list of {"field", "old", "new"} (JSON values), a list left out
-- when empty; "" when there are none.
local function window_changes(ended, started)
  local parts = {}
  for _, l in ipairs({{'ended', ended}, {'started', started}}) do
    if #l[2] > 0 then
      local items = {}
      for _, c in ipairs(l[2]) do
        items[#items + 1] = '{"field":' .. cjson.encode(c[1]) .. ',"old":' .. c[2] .. ',"new":' .. c[3] .. '}'
      end
      parts[#parts + 1] = '"' .. l[1] .. '":[' .. table.concat(items, ',') .. ']'
    end
  end
  if #parts == 0 then
    return ''
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- apply_windows brings the config in line with the window in force and
-- returns what it did (WINDOW_*), the start of the window concerned and
-- the fields it changed (window_changes).
local function apply_windows()
  local w = window_in_force()
  local current = tonumber(redis.call('HGET', KEYS[5], 'window'))
  local ended, started = {}, {}
  if current and (not w or w.start_ms ~= current) then
    end_window(ended)
    if w then
      start_window(w, started)
      return WINDOW_STARTED + WINDOW_ENDED, w.start_ms, window_changes(ended, started)
    end
    return WINDOW_ENDED, current, window_changes(ended, started)
  elseif w and not current then
    start_window(w, started)
    return WINDOW_STARTED, w.start_ms, window_changes(ended, started)
  end
  return WINDOW_NONE, 0, ''
end

local window_did, window_at, window_log = apply_windows()
local cfg = queue_config(KEYS[4])
local budget = cfg.budget -- the interval's, until adapt_budget sets the next one's
local due = next_tick_at(KEYS[5])

-- The sets the users' traffic fills (gone: a record per leave, done,
-- expiry or drop; stale: a mark per re-entry, leave or removal) are
-- trimmed at most this many members a tick (trim_below, common.lua: a
-- ZREMRANGEBYSCORE has no LIMIT), the rest by the ticks after, so that
-- a burst of them never makes one tick long. A tick itself writes at
-- most PURGE_MAX + DROP_MAX (2,000) gone records a line, and mark_gone
-- retires old ones as fast as leaves and dones write new ones.
local GONE_TRIM_MAX = 10000
local STALE_TRIM_MAX = 10000

-- Lanes. The lines are the general lane's (the queue's own
-- keys, "") and one per lane of LANES_READ: the configured lanes (the
-- config's "lanes", JSON) and any lane of the lanes SET still holding
-- places. A lane removed is served at the share it had when it went (the
-- tick HASH's "share:<lane>", lanes_replaced in common.lua) until it is
-- empty, then leaves the SET and is forgotten (forget_lanes): its people
-- keep their arrival order against everyone else, as they would have had
-- it stayed. A line is a table of its keys, its name and its share; the
-- general lane's share is what the lanes leave.
local configured_raw = redis.call('HGET', KEYS[4], 'lanes') or ''
local configured = {}
if configured_raw ~= '' then
  for _, l in ipairs(cjson.decode(configured_raw)) do
    configured[l.name] = l.share
  end
end

-- lines_now returns the lines, or nil when LANES_READ is not the configured
-- lanes and the SET's, sorted: the caller read them before a change.
local function lines_now()
  local names = redis.call('SMEMBERS', KEYS[18])
  local seen = {}
  for _, n in ipairs(names) do
    seen[n] = true
  end
  for n in pairs(configured) do
    if not seen[n] then
      names[#names + 1] = n
    end
  end
  table.sort(names)
  if table.concat(names, ',') ~= LANES_READ then
    return nil
  end
  local general = {name = '', waiting = KEYS[1], heard = KEYS[7], held = KEYS[16], stale = KEYS[17], draw = KEYS[9],
    seq = KEYS[12], arrivals = KEYS[13], share = 1, index = 0}
  local lines = {general}
  local removed, kept = 0, 0
  for i, n in ipairs(names) do
    local k = 19 + 8 * (i - 1)
    local share, gone = configured[n], configured[n] == nil
    if gone then
      share = tonumber(redis.call('HGET', KEYS[5], 'share:' .. n)) or 0
      removed = removed + share
    else
      kept = kept + share
    end
    lines[#lines + 1] = {name = n, waiting = KEYS[k + 1], heard = KEYS[k + 2], held = KEYS[k + 3], stale = KEYS[k + 4],
      draw = KEYS[k + 5], seq = KEYS[k + 6], arrivals = KEYS[k + 7], history = KEYS[k + 8],
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

-- not_applied is the reply of a call that applies no tick.
local function not_applied(until_next)
  local out = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, window_did, window_at, window_log, 0}
  out[TICK_UNTIL_NEXT] = until_next
  return out
end

-- place_draw places a scheduled opening's draw. From opens_at, every call
-- (not just the interval's tick) places a bounded batch of the
-- pre-queue's participants in each line at draw_key(seed, user): a
-- uniformly random order, ahead of everyone who arrived after opens_at.
-- The first such call records the seed (with draw_for = the opening), so
-- the draw can be audited; every line's draw uses it. Nobody is admitted
-- until every participant is placed, so it returns true while some are
-- left. (A draw left behind by an opening the operator cleared is
-- placed too.)
local function place_draw(lines)
  if cfg.opens_at_ms > now then
    return false
  end
  local left = false
  for _, line in ipairs(lines) do
    if redis.call('SCARD', line.draw) > 0 then
      local d = redis.call('HMGET', KEYS[5], 'draw_for', 'draw_seed')
      local seed = d[2]
      if tonumber(d[1]) ~= cfg.opens_at_ms then
        seed = DRAW_SEED
        redis.call('HSET', KEYS[5], 'draw_for', cfg.opens_at_ms, 'draw_seed', seed, 'draw_count', 0)
      end
      local batch = redis.call('SPOP', line.draw, DRAW_MAX)
      for i = 1, #batch, 500 do
        local args = {}
        for j = i, math.min(i + 499, #batch) do
          args[#args + 1] = draw_key(seed, batch[j])
          args[#args + 1] = batch[j]
        end
        redis.call('ZADD', line.waiting, unpack(args))
      end
      redis.call('HINCRBY', KEYS[5], 'draw_count', #batch)
      redis.call('HINCRBY', KEYS[5], field(line, 'placed'), #batch) -- arrivals, for the history
      left = left or redis.call('SCARD', line.draw) > 0
    end
  end
  return left
end

-- last_tick returns the tick HASH's fields close_interval reads, with
-- each line's arrival counter now and its own fields (line.state) read
-- into the lines, and the direct admissions since the last tick.
local function last_tick(lines)
  local state = redis.call('HMGET', KEYS[5], 'at_ms', 'moved', 'direct', 'abandoned', 'seq_at', 'placed', 'budget')
  for _, line in ipairs(lines) do
    line.state = redis.call('HMGET', KEYS[5], field(line, 'moved'), field(line, 'abandoned'), field(line, 'seq_at'),
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
-- are the queue's only).
local function close_interval(state, direct, lines)
  local admitted = (tonumber(state[2]) or 0) + direct
  if not (state[1] or admitted > 0) then
    return admitted
  end
  local started = tonumber(state[1]) or (now - cfg.refill_interval_ms)
  local active = active_count(KEYS[2], now, cfg.session_ttl_ms)
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
      redis.call('LTRIM', line.history, -HISTORY_KEEP, -1)
    end
  end
  -- The seventh field is the interval's budget; readers take
  -- entries of three to six fields too (keys.go, history).
  redis.call('RPUSH', KEYS[6], string.format('%d:%d:%d:%d:%d:%d:%d', started, admitted, waiting,
    tonumber(state[4]) or 0, arrivals, active, tonumber(state[7]) or cfg.refill_size))
  redis.call('LTRIM', KEYS[6], -HISTORY_KEEP, -1)
  return admitted
end

-- purge_expired purges expired sessions, first, so the count of active
-- users below is what the cap sees (which does not depend on the purge
-- anyway). The entered set is ordered by admission time (a sliding
-- session's by its last renewal), so the expired ones come first; a
-- bounded batch keeps each tick short. Each is remembered as expired,
-- for the user who asks. A session is over at admission + ttl, the
-- moment status.lua and active_count stop counting it (score <= now -
-- ttl): purged from then. Returns how many it purged and their times
-- inside (stat_round).
local function purge_expired()
  local ended = redis.call('ZRANGE', KEYS[2], '-inf', now - cfg.session_ttl_ms, 'BYSCORE', 'LIMIT', 0, PURGE_MAX, 'WITHSCORES')
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
    local starts = redis.call('HMGET', KEYS[10], unpack(expired, i, last))
    for j = i, last do
      local start = tonumber(starts[j - i + 1]) or expired_at[j]
      inside[#inside + 1] = stat_round(expired_at[j] + cfg.session_ttl_ms - start)
    end
    redis.call('ZREM', KEYS[2], unpack(expired, i, last))
    redis.call('HDEL', KEYS[10], unpack(expired, i, last))
  end
  mark_gone(KEYS[8], 'expired', expired, now)
  emit(KEYS[11], KEYS[4], 'expired', expired, now)
  return purged, inside
end

-- adapt_budget returns the interval's budget and 1 if it stored a
-- proposed one. The origin's health drives the rate: a replica
-- proposes the effective refill internal/autorate worked out from the
-- budget it read; stored (within [min_refill_size, refill_size],
-- interval_budget) only while the controller is on and that reading is
-- still the budget.
local function adapt_budget()
  if PROPOSED and PROPOSED > 0 and BASED_ON == budget and cfg.adapt_enabled == 1 then
    local b = interval_budget(cfg.refill_size, true, PROPOSED, cfg.min_refill_size)
    redis.call('HSET', KEYS[4], 'refill_effective', b)
    return b, 1
  end
  return budget, 0
end

-- room_for_moves is how many this tick may admit: the budget, none while
-- paused, and no more than the cap on active users leaves room for.
local function room_for_moves()
  if cfg.paused == 1 then
    return 0
  elseif cfg.max_active > 0 then
    return math.min(budget, math.max(0, cfg.max_active - active_count(KEYS[2], now, cfg.session_ttl_ms)))
  end
  return budget
end

-- Moving the head. A user not heard from (enter, status) for
-- abandon_after_ms has closed the page: the place is dropped when it
-- reaches the head, without spending a token, and the next one moves
-- instead; at most DROP_MAX such places per tick and line.
-- A place with no record at all was far from the head when last heard
-- (only places near_head keep one): its page may well be polling, just
-- not yet near enough to say so (a refill raised tenfold brings such
-- places to the head fast). It is held: set aside in the
-- held ZSET at its arrival number, out of the line, and asked to confirm:
-- a mark of -(the confirmation's deadline) stands for its record. Its
-- next status call (status.lua) puts it back in the line at its arrival
-- number, ahead of everyone behind it, so the next tick admits it: late,
-- not lost. Unconfirmed by the deadline, it is dropped as abandoned
-- (drop_expired). Set aside, held places never stop a tick from reaching
-- the people behind them: silent places at the head cost the line none
-- of its rate. A tick drops at most DROP_MAX places a line in all (held ones past
-- their deadline first); an abandoned place popped beyond that is held
-- with a deadline already past, for the next tick to drop. At most
-- HOLD_MAX are held per tick, so a tick pops at most room + DROP_MAX +
-- HOLD_MAX + 1000 places (a round's pop is at most 1000), and
-- drop_expired reads at most DROP_MAX marks.
-- The deadline is abandon_after from now, the time any place is given to
-- be heard from: a page polling as told asks at least twice in it.

-- (Each line, a lane's too, is moved the same way, with its own keys:
-- line, lines_now.)

-- Outages. A place is judged by when it was last heard (or its deadline
-- to confirm), and no page can be heard while Redis is away or every
-- replica is down: a holder asking then gets a 503, and its page backs off
-- (longer each time) before it asks again. So time when no tick could run
-- must not count against anyone. A tick applied more than an interval
-- (and at least OUTAGE_MIN_MS: a scheduler under load lags by less) after
-- it was due finds that the room was away for about that long; from then
-- until "grace_until_ms" in the tick HASH, the away time again and a full
-- abandon_after later, no place is dropped as abandoned: a place that
-- reaches the head unheard is held aside until then instead, and the
-- holder's next ask brings it back (status.lua). The grace is one field,
-- whatever the line's length: no mark is rewritten. A place that went
-- silent with no outage is dropped as before.
local OUTAGE_MIN_MS = 1000

-- outage_grace returns until when no place is dropped as abandoned (0:
-- no outage), recording a new one when this tick comes after one.
local function outage_grace()
  local grace = tonumber(redis.call('HGET', KEYS[5], 'grace_until_ms')) or 0
  local away = due and now - due or 0
  -- Only a replica that could not reach Redis, or has just started, says
  -- the time since the last tick was an outage (WAS_AWAY): a late timer
  -- on a busy machine is not one, and must not stop the drops.
  if WAS_AWAY and cfg.abandon_after_ms > 0 and away > math.max(cfg.refill_interval_ms, OUTAGE_MIN_MS) then
    grace = math.max(grace, now + away + cfg.abandon_after_ms)
    redis.call('HSET', KEYS[5], 'grace_until_ms', grace)
  end
  return grace
end

-- drop_expired drops the held places whose deadline has passed (heard
-- marks in [-now, 0)), at most DROP_MAX, adding them to dropped: a place
-- that re-entered the line meanwhile keeps its new place, only the mark
-- and the held entry go (unheard again, it is asked again if it reaches
-- the head silent).
local function drop_expired(line, dropped, grace)
  if now < grace then
    return -- the room was away: see "Outages"
  end
  local marks = redis.call('ZRANGE', line.heard, -now, '(0', 'BYSCORE', 'LIMIT', 0, DROP_MAX)
  if #marks == 0 then
    return
  end
  local was_held = redis.call('ZMSCORE', line.held, unpack(marks))
  local in_line = redis.call('ZMSCORE', line.waiting, unpack(marks))
  for i, u in ipairs(marks) do
    if was_held[i] and not in_line[i] then
      dropped[#dropped + 1] = u
    end
  end
  redis.call('ZREM', line.heard, unpack(marks))
  redis.call('ZREM', line.held, unpack(marks))
end

-- release puts held places back in the line when abandonment is off
-- (abandon_after 0): nobody is asked to confirm any more.
local function release(line)
  local back = redis.call('ZRANGE', line.held, 0, HOLD_MAX - 1, 'WITHSCORES')
  if #back == 0 then
    return
  end
  local args, users = {}, {}
  for i = 1, #back, 2 do
    args[#args + 1] = back[i + 1]
    args[#args + 1] = back[i]
    users[#users + 1] = back[i]
  end
  redis.call('ZADD', line.waiting, unpack(args))
  redis.call('ZREM', line.held, unpack(users))
end

-- pop_head moves, drops or holds places from the head until room users
-- are admitted (into m.admit, their arrival numbers into m.admit_seq) or
-- a bound is reached. Each round pops what is still to fill, more after a
-- round that admitted nobody (never more than 1000, far below Lua's stack
-- limit for unpack, nor than may still be held); a heard place popped
-- beyond room goes back (put_back). Returns the places held.
local function pop_head(line, room, m)
  local admit, admit_seq, dropped, grace = m.admit, m.admit_seq, m.dropped, m.grace
  local held, asked, put_back = {}, {}, {}
  local gone_before = now - cfg.abandon_after_ms
  local confirm_by = now + cfg.abandon_after_ms
  local want = room
  while #admit < room and #held < 2 * HOLD_MAX do
    local popped = redis.call('ZPOPMIN', line.waiting, math.min(want, 1000, HOLD_MAX - #held / 2))
    if #popped == 0 then
      break
    end
    local users, seqs = {}, {}
    for i = 1, #popped, 2 do
      users[#users + 1] = popped[i]
      seqs[#users] = popped[i + 1]
    end
    local heard = redis.call('ZMSCORE', line.heard, unpack(users))
    local done, admitted_before = {}, #admit
    for i, u in ipairs(users) do
      local h = tonumber(heard[i])
      if cfg.abandon_after_ms > 0 and (not h or (h < 0 and -h > now)) then
        -- Set aside until it confirms (or its deadline passes).
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        if not h then
          asked[#asked + 1] = -confirm_by
          asked[#asked + 1] = u
        end
      elseif cfg.abandon_after_ms > 0 and h <= gone_before and now < grace then
        -- Unheard for abandon_after, but the room was away meanwhile
        -- ("Outages"): held until the grace ends, not dropped.
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        asked[#asked + 1] = -grace
        asked[#asked + 1] = u
      elseif cfg.abandon_after_ms > 0 and h <= gone_before and #dropped < DROP_MAX then
        dropped[#dropped + 1] = u
        done[#done + 1] = u
      elseif cfg.abandon_after_ms > 0 and h <= gone_before then
        -- Past this tick's drops: held, its deadline past, for the next.
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        asked[#asked + 1] = -now
        asked[#asked + 1] = u
      elseif #admit < room then
        admit[#admit + 1] = u
        admit_seq[#admit] = tonumber(seqs[i])
        done[#done + 1] = u
      else
        put_back[#put_back + 1] = seqs[i]
        put_back[#put_back + 1] = u
      end
    end
    if #done > 0 then
      redis.call('ZREM', line.heard, unpack(done))
    end
    want = room - #admit
    if #admit == admitted_before then
      want = math.max(want, 2 * #users)
    end
  end
  for i = 1, #held, 1000 do
    redis.call('ZADD', line.held, unpack(held, i, math.min(i + 999, #held)))
  end
  for i = 1, #asked, 1000 do
    redis.call('ZADD', line.heard, unpack(asked, i, math.min(i + 999, #asked)))
  end
  if #put_back > 0 then
    redis.call('ZADD', line.waiting, unpack(put_back))
  end
  return #held / 2
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
-- least owed then waits a tick, within two places of its share. A lane is charged its allocation whether or not it could use it:
-- a line with fewer waiting gives the rest to the others in the same
-- interval (spare, move_lines), which are not charged for it, so neither
-- an idle lane banks its share nor a busy one pays back what nobody else
-- wanted. A change of the configured lanes starts every credit at 0
-- (credit_for: the configuration the credits are for).
local function split(room, lines)
  local fresh = redis.call('HGET', KEYS[5], 'credit_for') ~= configured_raw
  local given = 0
  for i = 2, #lines do
    local line = lines[i]
    local c = 0
    if not fresh then
      c = tonumber(redis.call('HGET', KEYS[5], field(line, 'credit'))) or 0
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
    redis.call('HSET', KEYS[5], field(lines[i], 'credit'), string.format('%.17g', lines[i].credit))
  end
  redis.call('HSET', KEYS[5], 'credit_for', configured_raw)
end

-- move_lines moves up to room places in all (see "Moving the head"):
-- each line first up to its allocation (split), then the room they left
-- to the lines that filled theirs, the most owed first, until the room is
-- used or no line has more. Each line's admitted and their arrival
-- numbers go into line.admit and line.admit_seq, the places dropped into
-- dropped; returns everyone admitted.
local function move_lines(room, lines, dropped, grace)
  local all = {}
  local function take(line, n)
    local m, before = {admit = {}, admit_seq = {}, dropped = dropped, grace = grace}, #dropped
    pop_head(line, n, m)
    line.dropped = line.dropped + #dropped - before
    for i, u in ipairs(m.admit) do
      line.admit[#line.admit + 1] = u
      line.admit_seq[#line.admit_seq + 1] = m.admit_seq[i]
      all[#all + 1] = u
    end
    return #m.admit
  end
  for _, line in ipairs(lines) do
    line.admit, line.admit_seq, line.dropped = {}, {}, 0
    if cfg.abandon_after_ms > 0 then
      local before = #dropped
      drop_expired(line, dropped, grace)
      line.dropped = #dropped - before
    else
      release(line)
    end
    if #lines == 1 then
      line.alloc = room
    end
    line.full = take(line, line.alloc) == line.alloc
  end
  local spare = room - #all
  while spare > 0 do
    local open = {}
    for _, line in ipairs(lines) do
      if line.full then
        open[#open + 1] = line
      end
    end
    if #open == 0 then
      break
    end
    table.sort(open, function(a, b)
      if a.credit ~= b.credit then
        return a.credit > b.credit
      end
      return a.index < b.index
    end)
    for _, line in ipairs(open) do
      local got = take(line, spare)
      line.full = got == spare and got > 0
      spare = spare - got
      if spare == 0 then
        break
      end
    end
  end
  return all
end

-- admit writes the admissions and the drops, and tells the site.
local function admit(all, dropped)
  for i = 1, #all, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #all) do
      chunk[#chunk + 1] = now
      chunk[#chunk + 1] = all[j]
    end
    redis.call('ZADD', KEYS[2], unpack(chunk))
  end
  mark_gone(KEYS[8], 'abandoned', dropped, now)
  emit(KEYS[11], KEYS[4], 'abandoned', dropped, now)
  emit(KEYS[11], KEYS[4], 'admitted', all, now)
end

-- leave_tokens sets and returns the tokens left for direct entries until
-- the next tick: the budget (refill_size, or the effective refill while
-- adapting) less the users moved, whatever the last interval left
-- (unused tokens do not carry over), so that the interval this tick
-- opens admits at most the budget. (Direct entries obey the pause and
-- the cap too: enter.lua.)
local function leave_tokens(moved)
  local tokens = budget - moved
  redis.call('SET', KEYS[3], tokens)
  return tokens
end

-- set_rates leaves each line's expected admissions per interval in the
-- tick HASH ("rate:<lane>", common.lua's line_rate, for the ETA of its
-- places): what it got when people are left in it, else its allocation
-- and the room nobody used; never below 1. While nothing can be admitted
-- (paused, at the cap) its share of the budget. Without lanes there are
-- no rates: every script's ETA uses the budget, as before lanes.
local function set_rates(room, lines, moved)
  if #lines == 1 then
    redis.call('HDEL', KEYS[5], 'rate:')
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
    redis.call('HSET', KEYS[5], 'rate:' .. line.name, line.rate)
  end
end

-- forget_lanes takes out of the lanes SET each lane no longer configured
-- whose line is empty, with its fields in the tick HASH (its share when
-- removed included).
local function forget_lanes(lines)
  for _, line in ipairs(lines) do
    if line.name ~= '' and not configured[line.name] and redis.call('ZCARD', line.waiting) == 0 and
        redis.call('ZCARD', line.held) == 0 and redis.call('SCARD', line.draw) == 0 then
      redis.call('SREM', KEYS[18], line.name)
      redis.call('HDEL', KEYS[5], 'rate:' .. line.name, 'credit:' .. line.name, 'share:' .. line.name)
    end
  end
end

-- Line statistics: how long the admitted waited, how far the
-- ETA their page was given at entry was off, how long admissions lasted.
-- No record per waiting user (the line's memory is the scale issue's
-- budget): instead, each applied tick leaves a checkpoint in arrivals,
-- scored by the arrival counter then, holding the time, the line left
-- and the settings. A user with arrival number s entered after the
-- checkpoint c with the highest score below s and before the next one
-- (at_next: the next checkpoint's time, or now), at place
-- waiting_c + (s - score_c), and the page answered, as Go's Ticket.ETA
-- does, that the tick ceil(place / refill) - 1 intervals after the next
-- one would admit it. So, at admission:
--   time in line = now - (at_c + at_next) / 2, from the middle of the
--     interval it entered in (within half an interval of the truth);
--   ETA error = now - (at_c + interval_c + floor((place - 1) / refill_c) * interval_c),
--     exact when nobody left or entered again during that interval (each
--     who did makes the place counted one too far back) and the tick was
--     not late when the user entered (its page was then told "now").
-- Places from an opening's draw (scores below 1), and those that entered
-- before the queue's first checkpoint, are not measured. Direct
-- admissions waited 0 and were told no ETA. Groups of like values are
-- the reply's tail (for Prometheus) and go into samples with done.lua's
-- times inside, which the back office reads (Store.LineReport).
local SAMPLES_KEEP = 10000

-- new_groups returns measured, which adds to groups count people of line
-- index whose kind measured value, the same group as the last of that
-- kind when the value is the same: those admitted together
-- mostly share their checkpoint, so runs are long, and a number compared
-- costs far less than a string key built per user.
local function new_groups(groups, index)
  local last_of = {}
  local function measured(kind, value, count)
    local i = last_of[kind]
    if i and groups[i + 1] == value then
      groups[i + 2] = groups[i + 2] + count
    else
      last_of[kind] = #groups + 1
      groups[#groups + 1] = kind
      groups[#groups + 1] = value
      groups[#groups + 1] = count
      groups[#groups + 1] = index
    end
  end
  return measured
end

-- measure_waits measures the admitted's time in line and ETA error from
-- the checkpoints (admit_seq: their arrival numbers, in arrival order).
local function measure_waits(line, measured, admit_seq)
  local first, last = nil, nil
  for _, s in ipairs(admit_seq) do
    if s >= 1 then
      first = first or s
      last = s
    end
  end
  if not first then
    return
  end
  -- Admitted in arrival order: walk the checkpoints below the last one.
  -- The checkpoints below the last one, then the next one's member.
  local cps = redis.call('ZRANGE', line.arrivals, '-inf', '(' .. last, 'BYSCORE', 'WITHSCORES')
  cps[#cps + 1] = redis.call('ZRANGE', line.arrivals, last, '+inf', 'BYSCORE', 'LIMIT', 0, 1)[1]
  local c, cp = -1, nil
  for _, s in ipairs(admit_seq) do
    while c + 3 <= #cps and tonumber(cps[c + 3]) < s do
      c = c + 2
      cp = nil
    end
    if c >= 1 and s >= 1 then
      if not cp then
        local at, w, r, iv = string.match(cps[c], '^(%d+):(%d+):(%d+):(%d+)$')
        cp = {at = tonumber(at), waiting = tonumber(w), refill = tonumber(r), interval = tonumber(iv), seq = tonumber(cps[c + 1])}
        cp.next_at = cps[c + 2] and tonumber(string.match(cps[c + 2], '^(%d+):')) or now
      end
      measured(STAT_LINE, now - math.floor((cp.at + cp.next_at) / 2), 1)
      if cp.refill > 0 then
        local ahead = math.floor((cp.waiting + s - cp.seq - 1) / cp.refill)
        measured(STAT_ETA, now - (cp.at + (1 + ahead) * cp.interval), 1)
      end
    end
  end
end

-- save_samples appends the groups, then done.lua's times inside since the
-- last tick, to samples, keeping the newest SAMPLES_KEEP. A lane's
-- samples carry its name as a fifth field (lines: index -> line).
local function save_samples(groups, lines)
  local samples = {}
  for i = 1, #groups, 4 do
    local s = string.format('%d:%d:%d:%d', now, groups[i], groups[i + 1], groups[i + 2])
    if groups[i + 3] > 0 then
      s = s .. ':' .. lines[groups[i + 3] + 1].name
    end
    samples[#samples + 1] = s
  end
  -- done.lua's times inside since the last tick: already observed by the
  -- replica that ran it, so they go to samples only.
  local ends = redis.call('HGETALL', KEYS[15])
  if #ends > 0 then
    redis.call('DEL', KEYS[15])
    for i = 1, #ends, 2 do
      samples[#samples + 1] = string.format('%d:%d:%s:%s', now, STAT_INSIDE, ends[i], ends[i + 1])
    end
  end
  for i = 1, #samples, 1000 do
    redis.call('RPUSH', KEYS[14], unpack(samples, i, math.min(i + 999, #samples)))
  end
  if #samples > 0 then
    redis.call('LTRIM', KEYS[14], -SAMPLES_KEEP, -1)
  end
end

-- line_statistics measures this tick's admissions (direct: those who
-- entered directly since the last tick; each line's admit_seq: the
-- arrival numbers of those it moved; inside: the purged sessions' times
-- inside), saves them and returns their groups.
local function line_statistics(direct, lines, inside)
  local groups = {}
  local measured = new_groups(groups, 0)
  if direct > 0 then
    measured(STAT_LINE, 0, direct)
  end
  for _, v in ipairs(inside) do
    measured(STAT_INSIDE, v, 1)
  end
  for _, line in ipairs(lines) do
    measure_waits(line, new_groups(groups, line.index), line.admit_seq)
  end
  save_samples(groups, lines)
  return groups
end

-- checkpoint leaves this tick's checkpoint in a line's arrivals (one
-- with the same score has seen no arrival since: this one replaces it),
-- then drops those no place in the line needs: all below the one that
-- covers the head. There is at most one checkpoint per applied tick,
-- however many arrive, so that trim needs no bound. Its refill is what
-- the line's pages were told an interval admits (line.rate with lanes,
-- else the budget). Returns the line's length.
local function checkpoint(line)
  local left = redis.call('ZCARD', line.waiting)
  local seq_now = line.seq_now
  redis.call('ZREMRANGEBYSCORE', line.arrivals, seq_now, seq_now)
  redis.call('ZADD', line.arrivals, seq_now, string.format('%d:%d:%d:%d', now, left, line.rate or budget, cfg.refill_interval_ms))
  local head = redis.call('ZRANGE', line.waiting, 0, 0, 'WITHSCORES')
  local cover = redis.call('ZRANGE', line.arrivals, '(' .. (head[2] or seq_now + 1), '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if cover[2] then
    redis.call('ZREMRANGEBYSCORE', line.arrivals, '-inf', '(' .. cover[2])
  end
  -- The stale credentials' marks the head has passed: the snapshot places
  -- no arrival number below the head (snapshot.go), so a mark left below
  -- it by the bound only costs a reader a Redis lookup it would make
  -- anyway, until a later tick trims it.
  trim_below(line.stale, '(' .. (head[2] or seq_now + 1), STALE_TRIM_MAX)
  return left
end

-- record_tick records the tick in the tick HASH: the next tick a full
-- interval from now (see the top), whenever this one was due;
-- min_next_ms is the previous version's (next_tick_at). Each line's
-- arrival counter, and a lane's moves and drops, are its own fields.
local function record_tick(lines, moved, dropped)
  redis.call('HDEL', KEYS[5], 'min_next_ms')
  redis.call('HSET', KEYS[5],
    'next_at_ms', now + cfg.refill_interval_ms,
    'at_ms', now,
    'moved', moved,
    'abandoned', dropped,
    'direct', 0,
    'budget', budget)
  for _, line in ipairs(lines) do
    redis.call('HSET', KEYS[5], field(line, 'seq_at'), line.seq_now, field(line, 'placed'), 0)
    if line.name ~= '' then
      redis.call('HSET', KEYS[5], field(line, 'moved'), #line.admit, field(line, 'abandoned'), line.dropped)
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
  out[TICK_LATE] = due and now - due or 0
  out[TICK_UNTIL_NEXT] = cfg.refill_interval_ms
  out[TICK_BUDGET] = budget
  out[TICK_ADAPTED] = r.adapted
  out[TICK_WINDOW] = window_did
  out[TICK_WINDOW_AT] = window_at
  out[TICK_WINDOW_CHANGES] = window_log
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

-- The body: each step one call, in order.
local lines = lines_now()
if not lines then
  local out = not_applied(0)
  out[TICK_APPLIED] = -1 -- the lanes changed since the caller read them
  return out
end
if place_draw(lines) then
  return not_applied(0) -- the next calls go on placing it
end
if due and now < due then
  return not_applied(due - now)
end
local state, direct = last_tick(lines)                         -- what the last tick left
local admitted = close_interval(state, direct, lines)          -- close the interval
local purged, inside = purge_expired()                         -- purge
local adapted
budget, adapted = adapt_budget()                               -- budget
local room = room_for_moves()
if #lines > 1 then
  split(room, lines)                                           -- each line's part
end
local dropped = {}
local all = move_lines(room, lines, dropped, outage_grace())   -- move the heads
admit(all, dropped)
trim_below(KEYS[8], now - GONE_KEEP_MS, GONE_TRIM_MAX)         -- forget the gone past an hour
local tokens = leave_tokens(#all)                              -- tokens
set_rates(room, lines, #all)                                   -- the lines' rates
local groups = line_statistics(direct, lines, inside)          -- statistics
local left = 0
for _, line in ipairs(lines) do
  line.left = checkpoint(line)                                 -- checkpoints
  left = left + line.left
end
forget_lanes(lines)
record_tick(lines, #all, #dropped)                             -- record the tick
return applied_reply({moved = #all, waiting = left, tokens = tokens, purged = purged,
  admitted = admitted, abandoned = #dropped, adapted = adapted}, lines, groups)

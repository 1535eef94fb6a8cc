-- windows.lua: brings the config in line with the schedule's window in
-- force on the Redis clock (schedule.lua): a window's start writes its
-- values, its end puts back those nobody changed since. Each happens once,
-- in whichever replica's call sees it first; a call that finds the window
-- in force applied changes nothing. The store calls it before a tick that
-- answers WINDOWS_DUE (docs/ARCHITECTURE.md, "Windows are applied before
-- the tick").
--
-- KEYS[1] -> config   (HASH)
-- KEYS[2] -> tick     (HASH: "window", the start of the window applied;
--                      "window_saved", its memory; "pause_kept")
-- KEYS[3] -> events   (STREAM: the webhooks' outbox, common_events.lua)
-- KEYS[4] -> lanes    (SET of the lanes that may hold places)
-- KEYS[5] -> schedule (STRING, JSON: schedule.lua)
-- ARGV[1..DEFAULTS] -> the replica's defaults queue_config reads
--            (common_config.lua), then "" (the general lane)
-- Returns, in WINDOWS_* order (common.lua): {what it did (WINDOW_STARTED
-- and WINDOW_ENDED bits, 0: nothing), the start (ms) of the window
-- started or, ended alone, ended, the fields changed with their old and
-- new values (JSON, "" for none)}. Each field changed is also told to the
-- site as settings_changed, its actor {"kind": "schedule"}.

local WINDOW_FIELDS = {'refill_size', 'max_active', 'lanes', 'paused'}

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
-- {f, old, new (told's JSON texts), new as stored} to log. k: the keys.
local function write_field(k, f, v, log)
  local old = redis.call('HGET', k.config, f) or false
  if f == 'lanes' then
    lanes_replaced(k.tick, k.lanes, old, v or '')
  end
  if v then
    redis.call('HSET', k.config, f, v)
  else
    redis.call('HDEL', k.config, f)
  end
  if told(f, old) ~= told(f, v) then
    log[#log + 1] = {f, told(f, old), told(f, v), stored_or_default(f, v)}
  end
end

-- window_event tells the site of the fields a window's start or end
-- changed (log, write_field's), as settings_changed with the schedule as
-- its actor, the values as stored like a person's change; nothing when
-- it changed none.
local function window_event(k, log, now)
  if #log == 0 then
    return
  end
  local settings = {}
  for _, c in ipairs(log) do
    settings[c[1]] = c[4]
  end
  emit(k.events, k.config, 'settings_changed', {}, now, cjson.encode(settings), '{"kind":"schedule"}')
end

-- end_window restores each field the window set that nobody has changed
-- since (person_changed, common_settings.lua, drops a field a person
-- writes from the memory). A memory of an older version (field -> the
-- value before) has no written value to compare with: those fields are
-- restored as then.
local function end_window(k, log, now)
  local memory = cjson.decode(redis.call('HGET', k.tick, 'window_saved') or '{}')
  for _, f in ipairs(WINDOW_FIELDS) do
    local m = memory[f]
    if type(m) ~= 'table' and m ~= nil then
      m = {was = m}
    end
    if m and (m.set == nil or redis.call('HGET', k.config, f) == m.set) then
      write_field(k, f, m.was, log)
    end
  end
  redis.call('HDEL', k.tick, 'window', 'window_saved')
  window_event(k, log, now)
end

-- start_window writes w's values and remembers, per field, the value
-- before and the one written; a pause a person set during a window
-- (pause_kept) is not lifted: that field is left out.
local function start_window(k, w, log, now)
  local memory = {}
  local kept = redis.call('HGET', k.tick, 'pause_kept') == '1'
  for _, f in ipairs(WINDOW_FIELDS) do
    local v = window_value(w, f)
    if v and not (f == 'paused' and v == '0' and kept and redis.call('HGET', k.config, f) == '1') then
      memory[f] = {was = redis.call('HGET', k.config, f) or false, set = v}
      write_field(k, f, v, log)
    end
  end
  redis.call('HSET', k.tick, 'window', w.start_ms, 'window_saved', next(memory) == nil and '{}' or cjson.encode(memory))
  window_event(k, log, now)
end

-- window_changes is the changes of a window's end and of a start, as
-- WINDOWS_CHANGES holds them: {"ended": [...], "started": [...]}, each a
-- list of {"field", "old", "new"} (JSON values), a list left out when
-- empty; "" when there are none.
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

-- windows_reply is the reply, in WINDOWS_* order.
local function windows_reply(did, at, changes)
  local out = {}
  out[WINDOWS_DID], out[WINDOWS_AT], out[WINDOWS_CHANGES] = did, at, changes
  return out
end

-- apply_windows brings the config in line with the window in force and
-- returns the reply: what it did, the start of the window concerned and
-- the fields it changed (window_changes).
local function apply_windows(k, schedule_key, now)
  local w = window_in_force(schedule_key, now)
  local current = tonumber(redis.call('HGET', k.tick, 'window'))
  local ended, started = {}, {}
  if current and (not w or w.start_ms ~= current) then
    end_window(k, ended, now)
    if w then
      start_window(k, w, started, now)
      return windows_reply(WINDOW_STARTED + WINDOW_ENDED, w.start_ms, window_changes(ended, started))
    end
    return windows_reply(WINDOW_ENDED, current, window_changes(ended, started))
  elseif w and not current then
    start_window(k, w, started, now)
    return windows_reply(WINDOW_STARTED, w.start_ms, window_changes(ended, started))
  end
  return windows_reply(0, 0, '')
end

return apply_windows({config = KEYS[1], tick = KEYS[2], events = KEYS[3], lanes = KEYS[4]}, KEYS[5], now_ms())

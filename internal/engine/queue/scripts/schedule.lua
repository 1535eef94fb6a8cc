-- schedule.lua: the schedule's window in force, for windows.lua, which
-- applies it, and for the tick, which waits until it is applied. The
-- schedule (STRING) is JSON {"windows": [{"start_ms", "end_ms", and any of
-- "refill_size", "max_active", "lanes" (a JSON string of lanes, "" for
-- none), "paused"}]}, validated and without overlaps (schedule.go).

-- window_in_force returns the window of the schedule at schedule_key in
-- force at now, or nil.
local function window_in_force(schedule_key, now)
  local raw = redis.call('GET', schedule_key)
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

-- windows_due says whether the window in force at now is not the one
-- applied (the tick HASH's "window", its start): windows.lua has a start
-- or an end to make first.
local function windows_due(schedule_key, tick_key, now)
  local w = window_in_force(schedule_key, now)
  return (w and w.start_ms) ~= tonumber(redis.call('HGET', tick_key, 'window'))
end

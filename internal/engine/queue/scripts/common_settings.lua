-- common_settings.lua: what every writer of the settings keeps in step:
-- the shares of lanes removed, and the schedule's memory of what a person
-- changed. Part of the common prelude (common.lua).

-- Lanes removed. A lane the configured lanes drop keeps its people, who
-- keep their arrival order against everyone else by being served at the
-- share the lane had when it went, until its line is empty (tick_lines.lua,
-- lines_now; docs/ARCHITECTURE.md, "Lanes"): the tick HASH remembers it
-- as "share:<lane>". lanes_replaced is called by every writer of the
-- config's "lanes" (settings.lua, windows.lua) with the value
-- before and after: each lane dropped whose line may hold places (it is
-- in the lanes SET) is remembered at its old share, each lane configured
-- again is forgotten (its configured share counts again).
local function lanes_replaced(tick_key, lanes_key, old_raw, new_raw)
  local function shares(raw)
    local out = {}
    if raw and raw ~= '' then
      for _, l in ipairs(cjson.decode(raw)) do
        out[l.name] = l.share
      end
    end
    return out
  end
  local old, new = shares(old_raw), shares(new_raw)
  for name, share in pairs(old) do
    if new[name] == nil and redis.call('SISMEMBER', lanes_key, name) == 1 then
      redis.call('HSET', tick_key, 'share:' .. name, string.format('%.17g', share))
    end
  end
  for name in pairs(new) do
    redis.call('HDEL', tick_key, 'share:' .. name)
  end
end

-- Windows and people. While a window is in force (the tick HASH's
-- "window"), its memory ("window_saved", windows.lua) holds, per field it
-- set, the value before it and the value it wrote; its end restores a
-- field only if nobody has changed it since. person_changed is called by
-- a person's change (settings.lua, ARGV-style field, value, ... list from
-- first): each field it writes leaves the window's memory, so the window's
-- end leaves it as the person set it, even to the value the window wrote.
-- A pause a person sets while a window is in force is kept ("pause_kept")
-- until a person lifts it: no window's end or start lifts it.
local function person_changed(tick_key, fields, first)
  local window = redis.call('HGET', tick_key, 'window')
  local raw = redis.call('HGET', tick_key, 'window_saved')
  local memory = raw and cjson.decode(raw)
  for i = first, #fields, 2 do
    local f, v = fields[i], fields[i + 1]
    if memory then
      memory[f] = nil
    end
    if f == 'paused' and v == '0' then
      redis.call('HDEL', tick_key, 'pause_kept')
    elseif f == 'paused' and v == '1' and window then
      redis.call('HSET', tick_key, 'pause_kept', '1')
    end
  end
  if memory then
    redis.call('HSET', tick_key, 'window_saved', next(memory) == nil and '{}' or cjson.encode(memory))
  end
end

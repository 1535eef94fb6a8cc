-- common_events.lua: the site's events (webhooks' outboxes), written by
-- the script that causes them. Part of the common prelude (common.lua).

-- Events for the site (webhooks). A queue whose config HASH
-- holds webhooks = 1 (queue.Store.SetOutbox, for the delivery workers, while
-- the queue has a webhook URL) keeps two outboxes, STREAMs of entries
-- {type, at (ms, Redis clock), subs (user ids, "\n"-joined: ids hold no
-- control character), settings (settings_changed: JSON)}, written here,
-- inside the script that causes the event, so an event is recorded if and
-- only if its change is (or counted as dropped). At most EVENTS_PER_ENTRY
-- users per entry (one delivery each). Without the flag an event costs
-- one HMGET, once per script call, and only in a call that has something
-- to tell: status, and enters that only queue, pay nothing.
--
-- emit writes the events outbox: admissions and their ends, the
-- operator's removals and settings, which the room's rate and the
-- operator bound. emit_bulk writes the bulk outbox: a user's own leaving,
-- which anyone can cause at will by entering and leaving (measured:
-- 280 cycles delayed a real admitted event by 14 s). The workers read the
-- events outbox first, so no bulk backlog holds an admission back.
-- An outbox at its cap (EVENTS_MAXLEN entries; the bulk one, the
-- workers' webhooks_bulk_max or EVENTS_BULK_MAXLEN) takes no more: the
-- new events are dropped and counted in the config HASH (webhooks_dropped_
-- fields, which the workers read into a metric and reset): the entries
-- kept stay deliverable, none is trimmed unread (MAXLEN ~ used to drop
-- the oldest past 100,000, uncounted).
local EVENTS_PER_ENTRY = 100
local EVENTS_MAXLEN = 100000
local EVENTS_BULK_MAXLEN = 10000
local events_flag, events_bulk_max -- this call's reading of the config

-- common_events_begin sets this file's values for a call (scripts.go).
local function common_events_begin()
  events_flag, events_bulk_max = nil, nil
end

local function events_on(config_key)
  if events_flag == nil then
    local v = redis.call('HMGET', config_key, 'webhooks', 'webhooks_bulk_max')
    events_flag = v[1] == '1'
    events_bulk_max = tonumber(v[2]) or EVENTS_BULK_MAXLEN
  end
  return events_flag
end

-- append_events writes the events in entries of EVENTS_PER_ENTRY users
-- while the outbox holds fewer than maxlen entries, and counts the rest
-- (a settings event counts one) in the config's dropped_field.
-- settings and actor are a settings_changed event's (nil for the others;
-- actor "" when nobody is named).
local function append_events(events_key, config_key, maxlen, dropped_field, kind, subs, now, settings, actor)
  for i = 1, math.max(#subs, 1), EVENTS_PER_ENTRY do
    if redis.call('XLEN', events_key) >= maxlen then
      redis.call('HINCRBY', config_key, dropped_field, math.max(#subs - i + 1, 1))
      return
    end
    local fields = {'type', kind, 'at', now, 'subs', table.concat(subs, '\n', i, math.min(i + EVENTS_PER_ENTRY - 1, #subs))}
    if settings then
      fields[#fields + 1] = 'settings'
      fields[#fields + 1] = settings
    end
    if actor and actor ~= '' then
      fields[#fields + 1] = 'actor'
      fields[#fields + 1] = actor
    end
    redis.call('XADD', events_key, '*', unpack(fields))
  end
end

local function emit(events_key, config_key, kind, subs, now, settings, actor)
  if (#subs == 0 and not settings) or not events_on(config_key) then
    return
  end
  append_events(events_key, config_key, EVENTS_MAXLEN, 'webhooks_dropped_outbox_full', kind, subs, now, settings, actor)
end

local function emit_bulk(bulk_key, config_key, kind, subs, now)
  if #subs == 0 or not events_on(config_key) then
    return
  end
  append_events(bulk_key, config_key, events_bulk_max, 'webhooks_dropped_bulk_full', kind, subs, now)
end

-- settings.lua: an operator's change of a queue's settings, stored, and
-- told to the site (settings_changed) in the same step, so the event is
-- sent if and only if the change was made.
--
-- KEYS[1] -> config (HASH)
-- KEYS[2] -> events (STREAM: the webhooks' outbox, emit in common_events.lua)
-- KEYS[3] -> tick   (HASH: the window in force and its memory, the
--            shares of lanes removed; see common_settings.lua)
-- KEYS[4] -> lanes  (SET of the lanes that may hold places)
-- KEYS[5] -> the sealed draw's seed (STRING, draw_seal.lua)
-- ARGV[1] -> the event's settings, JSON {field: value}: the fields the site
--            is told of (the caller leaves out the private ones, such as
--            webhook_url, which may carry the receiver's token)
-- ARGV[2] -> who made the change, JSON {"kind", "name"}, or "" when not named
-- ARGV[3..5] -> a fresh seed for a draw (64 hex digits), its SHA-256 and id (draw.lua),
--            which a change of the opening's times may seal (draw_schedule); "", "", ""
--            when the change touches neither opens_at nor prequeue_from
-- ARGV[6..] -> field, value, field, value, ... (validated by the caller,
--            the fields of queue.Catalog)
-- Returns HSET's count of fields new to the HASH, or -1 having changed nothing: the
-- change would need a new seed for a draw already bound (draw_sealed).
local FIELDS = 6
if ARGV[3] ~= '' and not draw_schedule(KEYS[1], KEYS[3], KEYS[5], ARGV, FIELDS, {ARGV[3], ARGV[4], ARGV[5]}, now_ms()) then
  return -1
end
for i = FIELDS, #ARGV, 2 do
  if ARGV[i] == 'lanes' then
    lanes_replaced(KEYS[3], KEYS[4], redis.call('HGET', KEYS[1], 'lanes'), ARGV[i + 1])
  end
end
local n = redis.call('HSET', KEYS[1], unpack(ARGV, FIELDS))
for i = FIELDS, #ARGV, 2 do
  -- The controller switched off: its effective refill goes, so
  -- refill_size is the budget from this moment (interval_budget, common_config.lua), and
  -- a later switch on starts again from refill_size.
  if ARGV[i] == 'adapt_enabled' and ARGV[i + 1] == '0' then
    redis.call('HDEL', KEYS[1], 'refill_effective')
  end
end
person_changed(KEYS[3], ARGV, FIELDS)
emit(KEYS[2], KEYS[1], 'settings_changed', {}, now_ms(), ARGV[1], ARGV[2])
return n

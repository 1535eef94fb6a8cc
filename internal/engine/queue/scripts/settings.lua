-- settings.lua: an operator's change of a queue's settings, stored, and
-- told to the site (settings_changed) in the same step, so the event is
-- sent if and only if the change was made.
--
-- KEYS[1] -> config (HASH)
-- KEYS[2] -> events (STREAM: the webhooks' outbox, emit in common_events.lua)
-- KEYS[3] -> tick   (HASH: the window in force and its memory, the
--            shares of lanes removed; see common_settings.lua)
-- KEYS[4] -> lanes  (SET of the lanes that may hold places)
-- ARGV[1] -> the event's settings, JSON {field: value}: the fields the site
--            is told of (the caller leaves out the private ones, such as
--            webhook_url, which may carry the receiver's token)
-- ARGV[2] -> who made the change, JSON {"kind", "name"}, or "" when not named
-- ARGV[3..] -> field, value, field, value, ... (validated by the caller,
--            the fields of queue.Catalog)
-- Returns HSET's count of fields new to the HASH.
for i = 3, #ARGV, 2 do
  if ARGV[i] == 'lanes' then
    lanes_replaced(KEYS[3], KEYS[4], redis.call('HGET', KEYS[1], 'lanes'), ARGV[i + 1])
  end
end
local n = redis.call('HSET', KEYS[1], unpack(ARGV, 3))
for i = 3, #ARGV, 2 do
  -- The controller switched off: its effective refill goes, so
  -- refill_size is the budget from this moment (interval_budget, common_config.lua), and
  -- a later switch on starts again from refill_size.
  if ARGV[i] == 'adapt_enabled' and ARGV[i + 1] == '0' then
    redis.call('HDEL', KEYS[1], 'refill_effective')
  end
end
person_changed(KEYS[3], ARGV, 3)
emit(KEYS[2], KEYS[1], 'settings_changed', {}, now_ms(), ARGV[1], ARGV[2])
return n

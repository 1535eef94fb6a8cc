-- drops.lua: take the counts of events the queue's scripts dropped from a
-- full outbox (emit in the queue's common_events.lua), and reset them, at once:
-- a drop counted in between is neither lost nor taken twice.
--
-- KEYS[1] -> config (HASH: fields webhooks_dropped_<reason>)
-- ARGV[1..] -> the fields, one per reason
-- Returns the counts in ARGV's order (0: none).
local v = redis.call('HMGET', KEYS[1], unpack(ARGV))
local out = {}
for i = 1, #ARGV do
  out[i] = tonumber(v[i]) or 0
end
redis.call('HDEL', KEYS[1], unpack(ARGV))
return out

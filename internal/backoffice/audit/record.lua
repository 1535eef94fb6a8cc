-- record.lua: add one entry to a queue's audit log, stamped with the Redis
-- clock (one clock for every replica), and keep the newest max entries.
--
-- KEYS[1] -> the queue's audit log (LIST of JSON objects, newest first)
-- ARGV[1] -> the entry: a JSON object with at least one member, without at_ms
-- ARGV[2] -> max entries kept
-- Returns the entry's time (Redis clock, ms since the epoch).
local t = redis.call('TIME')
local ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
-- The time goes first, by string: a Lua number would lose the JSON's shape.
local entry = '{"at_ms":' .. ms .. ',' .. string.sub(ARGV[1], 2)
redis.call('LPUSH', KEYS[1], entry)
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return tonumber(ms)

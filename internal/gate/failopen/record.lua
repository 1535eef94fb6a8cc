-- record.lua: add what one replica's gate let through unchecked (fail mode
-- open) to a queue's record of it, which every replica adds to.
--
-- KEYS[1] -> the queue's fail-open record (HASH: requests, last_at_ms)
-- ARGV[1] -> requests let through since this replica's last record
-- ARGV[2] -> when the last of them passed, ms since the epoch
-- Returns the record's requests in all.
local n = redis.call('HINCRBY', KEYS[1], 'requests', ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[1], 'last_at_ms') or '0')
if tonumber(ARGV[2]) > last then
  redis.call('HSET', KEYS[1], 'last_at_ms', ARGV[2])
end
return n

-- lease.lua: take or renew a queue's probe lease (internal/ops/autorate), so one
-- replica at a time polls origin_probe_url. The token is the holder's,
-- from crypto/rand: only it renews the lease; another replica takes it
-- once it expires (its holder stopped).
--
-- KEYS[1] -> the lease (STRING: the holder's token, PX)
-- ARGV[1] -> this replica's token
-- ARGV[2] -> the lease's time to live (ms)
-- Returns 1 when this replica holds the lease, 0 when another does.
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0

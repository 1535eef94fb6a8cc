-- seen.lua: a client network an admission's passes were used from. The
-- networks of one admission (every pass issued for it, whatever its jti)
-- are kept together for the admission's life, so every replica counts the
-- same set.
--
-- KEYS[1] -> the admission's client networks (SET of networks: an IPv4
--            address, or an IPv6 /64)
-- ARGV[1] -> the client's limit key
-- ARGV[2] -> until_ms: the latest exp of a pass seen for the admission,
--            when the set may go (Unix ms); never brought forward, so an
--            older pass (an earlier exp) cannot end the count early
-- ARGV[3] -> max: the networks allowed; past max+1 the set stops growing
--            (the admission is shared either way), so a client feeding it
--            addresses costs Redis no memory
-- Returns the number of distinct networks, this one included (at most
-- max+1).
local function add(key, member, max)
  local n = redis.call('SCARD', key)
  if n > max and redis.call('SISMEMBER', key, member) == 0 then
    return n + 1 -- one more than allowed, not stored
  end
  redis.call('SADD', key, member)
  return redis.call('SCARD', key)
end

local function keep_until(key, until_ms)
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or now_ms + ttl < until_ms then
    redis.call('PEXPIREAT', key, until_ms)
  end
end

local n = add(KEYS[1], ARGV[1], tonumber(ARGV[3]))
keep_until(KEYS[1], tonumber(ARGV[2]))
return n

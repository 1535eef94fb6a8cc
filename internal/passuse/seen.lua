-- seen.lua: a client address a pass was used from. The addresses of one
-- pass are kept together for the pass's life, so every replica counts the
-- same set.
--
-- KEYS[1] -> the pass's client addresses (SET of networks: an IPv4
--            address, or an IPv6 /64)
-- ARGV[1] -> the client's limit key
-- ARGV[2] -> until_ms: the pass's exp, when the set may go (Unix ms)
-- Returns the number of distinct addresses, this one included.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return redis.call('SCARD', KEYS[1])

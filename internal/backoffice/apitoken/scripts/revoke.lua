-- revoke.lua: delete a token.
--
-- KEYS[1] -> tokens (HASH), KEYS[2] -> expiry (ZSET), KEYS[3] -> used (HASH)
-- ARGV[1] -> the token's id
-- Returns 1 when it existed, else 0.
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])

-- leave.lua: the user gives up: out of the line, and out of the entered set
-- if already admitted. Idempotent. Tokens are not given back: a token spent
-- on this user was this interval's admission.
--
-- KEYS[1] -> waiting (ZSET)
-- KEYS[2] -> entered (ZSET)
-- ARGV[1] -> user id
-- Returns the number of sets the user was removed from (0..1).
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])

-- attempt.lua: one authentication attempt by one client, judged and counted
-- in one step, so replicas share one budget and parallel guesses cannot
-- slip between a check and a count.
--
-- KEYS[1] -> the client's state (HASH fails, window_ends_ms, locked_until_ms,
--            strikes)
-- ARGV[1] -> digest of the presented secret
-- ARGV[2] -> digest of the expected secret
-- ARGV[3] -> failures that lock the client (within one window)
-- ARGV[4] -> window_ms: the failures of a window count together
-- ARGV[5] -> base_lock_ms: the first lock
-- ARGV[6] -> max_lock_ms: the bound on the doubling
-- ARGV[7] -> memory_ms: how long past locks count toward the next one's length
-- Returns {verdict, ms}:
--   {-1, ms} locked, the digests were not compared; ms left on the lock
--   { 1, 0}  the digests match (nothing is counted or cleared)
--   { 0, ms} no match, counted; ms > 0 when this failure locked the client
--            for ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local h = redis.call('HMGET', KEYS[1], 'fails', 'window_ends_ms', 'locked_until_ms', 'strikes')
local fails = tonumber(h[1]) or 0
local window_ends = tonumber(h[2]) or 0
local locked_until = tonumber(h[3]) or 0
local strikes = tonumber(h[4]) or 0

if locked_until > now then
  return {-1, locked_until - now}
end
if ARGV[1] == ARGV[2] then
  return {1, 0}
end

local max_failures = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local base = tonumber(ARGV[5])
local max_lock = tonumber(ARGV[6])
local memory = tonumber(ARGV[7])

if window_ends <= now then
  fails = 0
  window_ends = now + window
end
fails = fails + 1
local lock = 0
if fails >= max_failures then
  strikes = strikes + 1
  lock = max_lock
  -- base * 2^(strikes-1), without overflowing on a long-lived attacker.
  if strikes <= 40 then
    lock = math.min(base * 2 ^ (strikes - 1), max_lock)
  end
  locked_until = now + lock
  fails = 0
  window_ends = 0
end
redis.call('HSET', KEYS[1], 'fails', fails, 'window_ends_ms', window_ends,
  'locked_until_ms', locked_until, 'strikes', strikes)
-- Bounded memory: a client never locked is forgotten with its window; one
-- that was is remembered for memory_ms after its last failure (at least
-- for its lock), so its next lock is longer.
if strikes > 0 then
  redis.call('PEXPIRE', KEYS[1], math.max(memory, lock))
else
  redis.call('PEXPIRE', KEYS[1], window)
end
return {0, lock}

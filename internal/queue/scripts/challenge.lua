-- challenge.lua: the proof of work a queue asks for before entering, for
-- the challenge endpoint, behind the client's rate limit. A challenge
-- serves one enter, so a client gets them at its enter limit, in a bucket
-- of their own (op "challenge"): fetching one spends no enter. One call,
-- as the HGET it replaces was.
--
-- KEYS[1] -> config (HASH; field challenge_difficulty)
-- KEYS[2] -> the client's challenge rate bucket (STRING, see rate_take),
--            or the unused key when the bucket is not to be charged
-- ARGV[1] -> period_ms: the time one call earns back (fractional; 0: no limit)
-- ARGV[2] -> burst
-- ARGV[3] -> the calls to charge the bucket (0: not asked; the replica's
--            local stage let the call through, see local.go)
-- Returns {ALLOWED, difficulty} (0: no proof of work asked), or {LIMITED, wait_ms}
-- when the client is over its limit (nothing charged).
local cost = tonumber(ARGV[3])
if cost > 0 then
  local now = now_ms()
  local full_at, wait = rate_take(KEYS[2], now, tonumber(ARGV[1]), tonumber(ARGV[2]), cost)
  if wait > 0 then
    return {LIMITED, math.ceil(wait)}
  end
  rate_commit(KEYS[2], full_at, now)
end
return {ALLOWED, tonumber(redis.call('HGET', KEYS[1], 'challenge_difficulty')) or 0}

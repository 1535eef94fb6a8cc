-- moved.lua: the places that moved since a moment, for a replica's view
-- of recent moves (handoff.Tracker).
--
-- KEYS[1] -> moved (ZSET member=user, score=when it last moved: queue.MovedKey)
-- ARGV[1] -> since (ms, inclusive)
-- Returns {now_ms, member1, at1, member2, at2, ...}.
local out = {now_ms()}
local got = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES')
for i = 1, #got do
  out[#out + 1] = got[i]
end
return out

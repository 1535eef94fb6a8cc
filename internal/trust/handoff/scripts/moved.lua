-- moved.lua: one page of the places that moved since a moment, for a
-- replica's view of recent moves (handoff.Tracker, which reads page after
-- page until one comes back short). LIMIT bounds each call, so that a
-- replica's first read of an hour's moves does not hold Redis for all of
-- them at once.
--
-- KEYS[1] -> moved (ZSET member=user, score=when it last moved: rediskeys.Moved)
-- ARGV[1] -> since (ms, inclusive)
-- ARGV[2] -> how many of those to skip (the page's offset)
-- ARGV[3] -> how many to return at most (the page's size)
-- Returns {now_ms, member1, at1, member2, at2, ...}, oldest first.
local out = {now_ms()}
local got = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', ARGV[2], ARGV[3])
for i = 1, #got do
  out[#out + 1] = got[i]
end
return out

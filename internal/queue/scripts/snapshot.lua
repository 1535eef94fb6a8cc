-- snapshot.lua: what a replica needs to answer the status of a place far
-- from the head without asking Redis (snapshot.go): the reply head that
-- status.lua would give, how far from the head the exact answers reach,
-- and the line sampled at a few ranks, so that a place's arrival number
-- (which its credential carries) gives its position by interpolation.
-- Each replica reads it about once a second per queue, however many poll.
--
-- KEYS[1] -> waiting (ZSET member=user, score=arrival seq)
-- KEYS[2] -> config  (HASH)
-- KEYS[3] -> tick    (HASH, for the time to the next tick)
-- KEYS[4] -> draw    (SET of a scheduled opening's participants)
-- ARGV[1..5] -> default refill_size, refill_interval_ms, session_ttl_ms, max_active, abandon_after_ms
-- ARGV[6] -> even: how many evenly spaced ranks to sample besides the
--            head, the tail and the ranks doubling out from near_head
-- Returns the head (HEAD_*, as status.lua's), then near_head, the draw's
-- participants still to be placed, and (rank, seq) pairs in rank order:
--   {waiting, until_next_tick_ms, ..., until_open_ms, near, in_draw, rank1, seq1, rank2, seq2, ...}
local now = now_ms()
local _, interval, ttl, _, paused, abandon_after, opens_at, prequeue_from, _, _, refill = queue_config(KEYS[2])
-- refill: what an interval admits (the effective refill while adapting), for the ETA
local in_draw = redis.call('SCARD', KEYS[4])
local line = redis.call('ZCARD', KEYS[1])
local out = reply_head(line + in_draw, KEYS[3], now, refill, interval, ttl, paused, abandon_after, opens_at,
  prequeue_from)
local near = near_head(refill, interval, abandon_after)
out[#out + 1] = near
out[#out + 1] = in_draw
if line == 0 then
  return out
end

-- The ranks: dense where a place comes near the head (where an estimate
-- must be best), then evenly over the line.
local want = {[0] = true, [line - 1] = true}
local r = near
while r < line do
  want[r] = true
  r = r * 2
end
local even = tonumber(ARGV[6])
for i = 1, even - 1 do
  want[math.floor(line * i / even)] = true
end
local ranks = {}
for rank in pairs(want) do
  ranks[#ranks + 1] = rank
end
table.sort(ranks)
for _, rank in ipairs(ranks) do
  local e = redis.call('ZRANGE', KEYS[1], rank, rank, 'WITHSCORES')
  out[#out + 1] = rank
  out[#out + 1] = tonumber(e[2])
end
return out

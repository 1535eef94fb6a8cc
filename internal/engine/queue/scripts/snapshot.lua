-- snapshot.lua: what a replica needs to answer the status of a place far
-- from the head without asking Redis (snapshot.go): the reply head that
-- status.lua would give, how far from the head the exact answers reach,
-- and the line sampled at a few ranks, so that a place's arrival number
-- (which its credential carries) gives its position by interpolation.
-- Each replica reads it about once a second per queue, however many poll.
--
-- KEYS[1..4] waiting ZSET, config HASH, tick HASH (the next tick), draw SET
-- KEYS[5..7] held ZSET (set aside at the head), stale ZSET (member=user, score=the highest
--            arrival number of its credentials no longer naming its place), seq STRING
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then the line's lane ("": general)
-- ARGV[DEFAULTS + 1] even: how many evenly spaced ranks to sample besides the head, the tail
--            and the ranks doubling out from near_head
-- ARGV[DEFAULTS + 2] from: the stale entries to read are those scored from it ("-inf" on a
--            replica's first read; then the cursor the last read returned)
-- ARGV[DEFAULTS + 3] at most how many stale entries to read (a page)
-- Returns two arrays. The first: the head (HEAD_*, as status.lua's), then near_head, the
-- draw's participants still to be placed, the held places' count and highest arrival number
-- (0 when none), the cursor for the next read of stale, 1 if more stale entries wait past this
-- page (else 0), and (rank, seq) pairs in rank order. The second: the stale entries read,
-- {user1, score1, ...}: a credential of user1 whose arrival number is at most score1 no
-- longer names its place (leave.lua, enter.lua), so the replica asks Redis for it. Every entry
-- written after this read scores at least next_from: a leave scores the arrival counter then,
-- a re-entry one less than its new arrival number, and the counter never goes down.
local now = now_ms()
local cfg = queue_config(KEYS[2])
-- refill: what an interval admits from this line (the effective refill
-- while adapting, the general lane's part with lanes), for the ETA
local refill = line_rate(KEYS[3], cfg.budget)
local in_draw = redis.call('SCARD', KEYS[4])
local line = redis.call('ZCARD', KEYS[1])
local out = reply_head(line + in_draw, KEYS[3], now, refill, cfg)
local near = near_head(refill, cfg)
out[#out + 1] = near
out[#out + 1] = in_draw

-- stale_page reads the stale entries scored from ARGV[DEFAULTS + 2], at
-- most ARGV[DEFAULTS + 3],
-- and the cursor of the next read: the arrival counter when it read them
-- all; else the last score in the page, whose entries are then left for
-- the next read, or, when one score fills the page, every entry of that
-- score and the cursor past it.
local function stale_page()
  local from, limit = ARGV[DEFAULTS + 2], tonumber(ARGV[DEFAULTS + 3])
  local page = redis.call('ZRANGE', KEYS[6], from, '+inf', 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  if #page < 2 * limit then
    return page, tonumber(redis.call('GET', KEYS[7])) or 0, 0
  end
  local last = page[#page]
  if last == from then
    return redis.call('ZRANGE', KEYS[6], from, from, 'BYSCORE', 'WITHSCORES'), tonumber(last) + 1, 1
  end
  while #page > 0 and page[#page] == last do
    page[#page] = nil
    page[#page] = nil
  end
  return page, tonumber(last), 1
end

local held = redis.call('ZCARD', KEYS[5])
local held_max = 0
if held > 0 then
  held_max = tonumber(redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')[2])
end
local stale, next_from, more = stale_page()
out[#out + 1] = held
out[#out + 1] = held_max
out[#out + 1] = next_from
out[#out + 1] = more
if line == 0 then
  return {out, stale}
end

-- The ranks: dense where a place comes near the head (where an estimate
-- must be best), then evenly over the line.
local want = {[0] = true, [line - 1] = true}
local r = near
while r < line do
  want[r] = true
  r = r * 2
end
local even = tonumber(ARGV[DEFAULTS + 1])
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
return {out, stale}

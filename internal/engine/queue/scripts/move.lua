-- move.lua: move a place to another device (internal/trust/handoff calls it once
-- it has used a hand-over). The place's generation goes up, so every
-- credential issued before stops working in the scripts of enter, status
-- and leave (keep_current in common_places.lua), and the move is recorded
-- for the replicas' far-back status path (the moved ZSET, read by
-- handoff.Tracker). The place itself, its member id and its arrival
-- number, is not touched: same member, same position. The move is a
-- compare-and-set on the generation: it applies only while the place's
-- generation is not above the one the mover holds, and raises it above,
-- so of any moves of one place made at one generation exactly one
-- applies. (Not above, rather than equal: the gen HASH expires a while
-- after the queue's last move, and a credential may then hold a
-- generation above the stored 0, as before this script.)
--
-- KEYS[1] -> gen     (HASH member=user, value=generation)
-- KEYS[2] -> moved   (ZSET member=user, score=when it last moved, ms)
-- KEYS[3] -> waiting (ZSET: the line, read only)
-- KEYS[4] -> draw    (SET: a scheduled opening's participants, read only)
-- ARGV[1] -> member (user id); ARGV[2] -> the generation the mover holds (the hand-over's)
-- ARGV[3] -> how long a move stays in the moved ZSET (ms)
-- ARGV[4] -> how long the gen HASH is kept after the queue's last move (ms)
-- Returns {MOVE_DONE, the new generation, arrival number (0: in a draw)},
-- {MOVE_STALE} (the place moved since: another move applied) or
-- {MOVE_NOT_WAITING} (the place is neither in line nor in a draw).
local MOVE_DONE = 1
local MOVE_STALE = 2
local MOVE_NOT_WAITING = 3

local member, gen = ARGV[1], tonumber(ARGV[2])
if (tonumber(redis.call('HGET', KEYS[1], member)) or 0) > gen then
  return {MOVE_STALE}
end
local seq = redis.call('ZSCORE', KEYS[3], member)
if not seq and redis.call('SISMEMBER', KEYS[4], member) == 0 then
  return {MOVE_NOT_WAITING}
end
local now = now_ms()
redis.call('HSET', KEYS[1], member, gen + 1)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
redis.call('ZADD', KEYS[2], now, member)
-- Moves older than the window: each move drops those before it, so the
-- ZSET holds about one window's moves and this removes few at a time.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]))
return {MOVE_DONE, gen + 1, tonumber(seq) or 0}

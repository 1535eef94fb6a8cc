-- leave.lua: the user gives up, or the operator removes them: out of the
-- line, and out of the entered set if already admitted. Idempotent. Tokens
-- are not given back: a token spent on this user was this interval's
-- admission. The reason is kept (gone), so the user is told if they ask.
--
-- KEYS[1..6]  waiting ZSET, entered ZSET, heard ZSET, gone ZSET (member="<reason>:<user>",
--             score=when), draw SET, admitted HASH (a renewed sliding session's start)
-- KEYS[7..8]  config HASH (its webhooks flag), events STREAM (emit, common_events.lua: event
--             "left" for either reason, "removed" as a left of the operator's; internal/ops/webhook)
-- KEYS[9..12] gen HASH (the generations of places that moved, keep_current), held ZSET (set
--             aside at the head), stale ZSET (snapshot.lua), seq STRING (read only)
-- KEYS[13]    bulk STREAM (emit_bulk, common_events.lua: a user's own "left", which anyone
--             can repeat at will, waits behind the other events)
-- ARGV[1] -> user id
-- ARGV[2] -> reason: "left" or "removed"
-- ARGV[3] -> optional: the generation of the caller's place credential; a stale one changes
--            nothing (the place moved to another device). Absent for the operator's removal
--            and plain ids.
-- Returns the number of sets the user was removed from (0..1), or -1 for a stale credential.
local gen = tonumber(ARGV[3])
if gen and (tonumber(redis.call('HGET', KEYS[9], ARGV[1])) or 0) > gen then
  return -1
end
local in_line = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[10], ARGV[1])
local n = in_line + redis.call('ZREM', KEYS[2], ARGV[1]) + redis.call('SREM', KEYS[5], ARGV[1])
if in_line > 0 then
  -- Every credential of the user up to the arrival counter now names a
  -- place that is gone: the replicas' far-back path must not answer them
  -- from the snapshot. A later place gets a higher number.
  redis.call('ZADD', KEYS[11], 'GT', tonumber(redis.call('GET', KEYS[12])) or 0, ARGV[1])
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
if n > 0 then
  local now = now_ms()
  mark_gone(KEYS[4], ARGV[2], {ARGV[1]}, now)
  if ARGV[2] == 'removed' then
    emit(KEYS[8], KEYS[7], ARGV[2], {ARGV[1]}, now)
  else
    emit_bulk(KEYS[13], KEYS[7], ARGV[2], {ARGV[1]}, now)
  end
end
return n

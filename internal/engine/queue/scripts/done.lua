-- done.lua: the order page says an admitted user is done: the admission
-- ends now, so its slot counts no more against max_active (the next tick
-- reuses it) and its entry pass is revoked. Only the admission the pass
-- names (its start) ends: a stale pass cannot end a newer admission.
--
-- KEYS[1] -> entered (ZSET member=user, score=admission time ms)
-- KEYS[2] -> gone    (ZSET member="<reason>:<user>", score=when)
-- KEYS[3] -> admitted (HASH: a renewed sliding session's start, renew.lua)
-- KEYS[4] -> config  (HASH: its webhooks flag)
-- KEYS[5] -> events  (STREAM: the webhooks' outbox, emit in common_events.lua)
-- KEYS[6] -> inside  (HASH rounded time inside (ms) -> count, which the
--                     next tick folds into its samples: tick.lua)
-- ARGV[1] -> user id
-- ARGV[2] -> the admission's start (ms), from the pass
-- Returns {1, time inside (ms): from the admission's start to now} when
-- the admission ended, {0, 0} when it was not current.
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if at then
  at = tonumber(redis.call('HGET', KEYS[3], ARGV[1])) or tonumber(at)
end
if at and at == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
  local now = now_ms()
  mark_gone(KEYS[2], 'done', {ARGV[1]}, now)
  emit(KEYS[5], KEYS[4], 'done', {ARGV[1]}, now)
  redis.call('HINCRBY', KEYS[6], stat_round(now - at), 1)
  return {1, now - at}
end
return {0, 0}

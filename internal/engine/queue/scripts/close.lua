-- close.lua: the operator closes the sale (sold out) or opens it again,
-- and the site is told (settings_changed, then sale_closed or
-- sale_reopened) in the same step. While closed_at_ms is in the config,
-- every script reads it with the settings (configState, scripts.go): an
-- enter is refused (CLOSED), a status says so (HEAD_CLOSED), and the tick
-- drops the waiting places a chunk a call (tick_soldout.lua). Admissions
-- are left alone: people inside keep their sessions.
--
-- KEYS[1] -> config (HASH)
-- KEYS[2] -> events (STREAM: the webhooks' outbox, emit in common_events.lua)
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then ""
-- ARGV[DEFAULTS + 1] -> "close" or "reopen"
-- ARGV[DEFAULTS + 2] -> close: the message by language, JSON (validated by the caller)
-- ARGV[DEFAULTS + 3] -> close: when sales reopen (unix ms, 0: not said)
-- ARGV[DEFAULTS + 4] -> the events' settings, JSON {field: value}
-- ARGV[DEFAULTS + 5] -> who, JSON {"kind", "name"}, or ""
-- Returns when the sale was closed (ms; on reopen, when it had been: 0
-- if it was open), and 1 if this call changed it, else 0.
local now = now_ms()
local cfg = queue_config(KEYS[1])
local op, message, reopens = ARGV[DEFAULTS + 1], ARGV[DEFAULTS + 2], ARGV[DEFAULTS + 3]
local told, by = ARGV[DEFAULTS + 4], ARGV[DEFAULTS + 5]
local was = cfg.closed_at_ms or 0
if op == 'close' then
  -- Closing again changes the message and the reopening, not the moment.
  local at = was > 0 and was or now
  redis.call('HSET', KEYS[1], 'closed_at_ms', at, 'closed_message', message, 'reopens_at_ms', reopens)
  emit(KEYS[2], KEYS[1], 'settings_changed', {}, now, told, by)
  emit(KEYS[2], KEYS[1], 'sale_closed', {}, now, told, by)
  return {at, was == 0 and 1 or 0}
end
if was == 0 then
  return {0, 0}
end
redis.call('HDEL', KEYS[1], 'closed_at_ms', 'closed_message', 'reopens_at_ms')
emit(KEYS[2], KEYS[1], 'settings_changed', {}, now, told, by)
emit(KEYS[2], KEYS[1], 'sale_reopened', {}, now, told, by)
return {was, 1}

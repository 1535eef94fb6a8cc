-- draw.lua: the sealed draw, for the enter of a place joining it (Go
-- computes the place's draw key from the seed: draw.go). Seals one with
-- fresh when an opening lies ahead and none is sealed (a queue whose
-- opening was set before draws were sealed), as settings.lua does.
--
-- KEYS[1..3] config HASH, the seed STRING (rediskeys.DrawSeed), tick HASH
-- ARGV[1..3] a fresh seed (64 hex digits), its SHA-256 (hex) and its id (the SHA-256's first
--            13 hex digits, decimal)
-- Returns {id, seed, commitment} of the sealed draw, or {} when none is sealed and no
-- opening lies ahead.
local now = now_ms()
local cur = redis.call('HMGET', KEYS[1], 'draw_id', 'draw_commitment', 'opens_at_ms')
if not cur[1] then
  if (tonumber(cur[3]) or 0) <= now or redis.call('HEXISTS', KEYS[3], 'draw_placing') == 1 then
    return {}
  end
  seal_draw(KEYS[1], KEYS[2], ARGV)
  return {ARGV[3], ARGV[1], ARGV[2]}
end
return {cur[1], redis.call('GET', KEYS[2]) or '', cur[2] or ''}

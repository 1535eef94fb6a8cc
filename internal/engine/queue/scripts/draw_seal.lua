-- draw_seal.lua: the seal of a scheduled opening's draw (docs/DRAW.md),
-- for settings.lua and draw.lua. A draw is sealed from the moment an
-- opening is set until the tick reveals it at the opening (reveal_draw,
-- tick_close.lua): its seed, 256 bits from Go's crypto/rand, is in the
-- seed key (rediskeys.DrawSeed), which nothing that answers reads, and
-- only its SHA-256 is public (the config's draw_commitment, hex), with
-- draw_id (its first 13 hex digits as a number), which enter compares
-- with its caller's. The seed is bound once the pre-queue opens
-- (prequeue_from, or at once without one): participants join under keys
-- made with it, so from then on it never changes.

-- seal_draw stores fresh ({seed, commitment, id}) as the sealed draw.
local function seal_draw(config_key, seed_key, fresh)
  redis.call('SET', seed_key, fresh[1])
  redis.call('HSET', config_key, 'draw_commitment', fresh[2], 'draw_id', fresh[3])
end

-- draw_schedule keeps the seal in step with a change of the opening's
-- times (fields: HASH field, value, ... from first), before the change
-- is stored. Returns false, changing nothing, when the change would need
-- a new seed once the seed is bound (draw_sealed): a pre-queue opened
-- cannot close again (prequeue_from moved into the future), and no new
-- opening can be set while the last draw is still being placed. Else:
-- a seed bound is kept whatever the opening becomes (moved, or cleared:
-- the tick then places and reveals the draw at once); a seed not bound
-- yet (the pre-queue has not opened: nobody holds a key) is replaced by
-- fresh when an opening lies ahead, and discarded when none does.
local function draw_schedule(config_key, tick_key, seed_key, fields, first, fresh, now)
  local cur = redis.call('HMGET', config_key, 'opens_at_ms', 'prequeue_from_ms', 'draw_id')
  local opens, from = tonumber(cur[1]) or 0, tonumber(cur[2]) or 0
  local bound = cur[3] and now >= from
  for i = first, #fields, 2 do
    if fields[i] == 'opens_at_ms' then
      opens = tonumber(fields[i + 1]) or 0
    elseif fields[i] == 'prequeue_from_ms' then
      from = tonumber(fields[i + 1]) or 0
    end
  end
  if bound then
    return from <= now
  end
  if opens > now then
    if redis.call('HEXISTS', tick_key, 'draw_placing') == 1 then
      return false
    end
    seal_draw(config_key, seed_key, fresh)
  elseif cur[3] then
    redis.call('DEL', seed_key)
    redis.call('HDEL', config_key, 'draw_id', 'draw_commitment')
  end
  return true
end

-- enter.lua: put users into the queue, in the order given (the order in
-- which they reached this replica), each behind the defences; admitted at
-- once on a token while nobody waits, else at the tail with the next
-- arrival number from Redis (docs/ARCHITECTURE.md, "Enter, call by call").
-- Its steps are enter_defences.lua and enter_join.lua, before this file.
--
-- KEYS[1..5]   waiting ZSET, entered ZSET, tokens STRING (unset: a full bucket), seq STRING, config HASH
-- KEYS[6..10]  tick HASH, heard ZSET, draw SET, admitted HASH, events STREAM
-- KEYS[11..16] gen HASH, stale ZSET, arrival rate HASH, lanes SET, held ZSET, draw keys ZSET
-- KEYS[17..]   per call, only the keys it uses, in the order "Enter, call by call" lists
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then the line's lane ("": general)
-- ARGV[DEFAULTS + 1..LIMITS] limits per client and per place: period_ms, burst
-- ARGV[LIMITS + 1..LIMITS + 4] limits per network and per site: period_ms, burst
-- ARGV[LIMITS + 5..LIMITS + 8] the price of a place: bits (0: none), calm arrivals a second
--              (0: no pressure), the ceiling a person pays (bits), the human check answers (1|0)
-- ARGV[DRAWN] the id of the sealed draw whose keys follow the calls ("": none, draw.go)
-- ARGV[DRAWN + 1..] per call: user id, then "" (the usual enter) or what else it asks
--              ("<client cost> ... <flags>[ <lines>...]", as "Enter, call by call" says);
--              then, with a draw id, per call its draw key and the SHA-256 of its user id
--              (64 bytes), which a place joining the draw is kept under (rediskeys.DrawKeys)
-- Returns the head (HEAD_*, common.lua), a status and a place per call, then an arrival
-- number per call: its score in the line when WAITING there, else 0 (the place credential
-- carries it, for the snapshot). The place is the position when WAITING (0 in a draw), the
-- admission (ms) when ENTERED, the wait (ms) when LIMITED or FULL, the difficulty to pay when
-- CHALLENGE, 0 when HUMAN, the line holding the account (0: read the lanes again) when
-- OTHER_LINE, the reason when NOT_WAITING, 0 when CLOSED (the sale is closed: close.lua) or
-- DRAW_STALE (the draw keys are not the sealed draw's). Positions are the places once the call is done.

local FIXED = 16 -- KEYS before the per-call ones
local DRAWN = LIMITS + 9 -- ARGV before the per-call ones
local DRAW_ID = ARGV[DRAWN]
local PER_CALL = DRAW_ID == '' and 2 or 3 -- ARGV per call, the draw's included
local now = now_ms()
-- cfg.budget, what an interval admits (the effective refill while
-- adapting), gives the tokens and the ETA.
local cfg = queue_config(KEYS[5])
local in_draw = redis.call('SCARD', KEYS[8])
local out = reply_head(0, KEYS[6], now, line_rate(KEYS[6], cfg.budget), cfg)

-- The batch: what every step takes. Its answers (out after head), the
-- calls let through the defences (users, slot, gens, proof_key, held:
-- enter_defences.lua), their arrival numbers (seqs) and the places the
-- call made (arrived: in the line, in a draw, or admitted at once; the
-- queue's arrivals, whose rate the price feels).
local b = {
  k = {waiting = KEYS[1], entered = KEYS[2], tokens = KEYS[3], seq = KEYS[4], config = KEYS[5], tick = KEYS[6],
    heard = KEYS[7], draw = KEYS[8], admitted = KEYS[9], events = KEYS[10], gen = KEYS[11], stale = KEYS[12],
    arriving = KEYS[13], lanes = KEYS[14], held = KEYS[15], draw_keys = KEYS[16]},
  now = now, cfg = cfg, in_draw = in_draw, out = out, head = #out,
  calls = (#ARGV - DRAWN) / PER_CALL, args = DRAWN, -- call i is ARGV[args + 2i - 1] and ARGV[args + 2i]
  -- with a draw id, call i's draw key and id hash are ARGV[drawn + i]
  drawn = DRAW_ID ~= '' and DRAWN + 2 * (#ARGV - DRAWN) / 3 or nil,
  key = FIXED, -- the last per-call key taken
  limits = {client = {ARGV[DEFAULTS + 1], ARGV[DEFAULTS + 2]}, place = {ARGV[DEFAULTS + 3], ARGV[DEFAULTS + 4]},
    network = {ARGV[LIMITS + 1], ARGV[LIMITS + 2]}, site = {ARGV[LIMITS + 3], ARGV[LIMITS + 4]}},
  price = {bits = tonumber(ARGV[LIMITS + 5]), calm = tonumber(ARGV[LIMITS + 6]), ceiling = tonumber(ARGV[LIMITS + 7]),
    human = ARGV[LIMITS + 8] == '1', pressure = 0},
  users = {}, slot = {}, gens = {}, proof_key = {}, held = {}, seqs = {}, arrived = 0,
}

-- finish notes the batch's arrivals for the price and appends each
-- call's arrival number (0: none) to the reply.
local function finish(b)
  if b.price.bits > 0 and b.price.calm > 0 then
    arrivals_note(b.k.arriving, b.now, b.arrived)
  end
  for i = 1, b.calls do
    b.out[b.head + 2 * b.calls + i] = b.seqs[i] or 0
  end
  return b.out
end

-- The body: each step one call, in order.
if cfg.closed_at_ms then
  for i = 1, b.calls do                                                      -- sold out: nobody joins
    out[b.head + 2 * i - 1], out[b.head + 2 * i] = CLOSED, 0
  end
  return finish(b)
end
if cfg.opens_at_ms > now and now >= cfg.prequeue_from_ms and (DRAW_ID == '' or tonumber(DRAW_ID) ~= cfg.draw_id) then
  for i = 1, b.calls do                                                      -- the draw's keys are not the sealed draw's:
    out[b.head + 2 * i - 1], out[b.head + 2 * i] = DRAW_STALE, 0             -- nothing changed, nothing charged
  end
  return finish(b)
end
if LANE ~= '' then
  redis.call('SADD', b.k.lanes, LANE)                                        -- a lane's line may hold places
end
pass_defences(b)                                                             -- the defences
b.users, b.slot = keep_current(b.k.gen, b.users, b.slot, b.gens, out, b.head) -- moved places' old credentials
if cfg.opens_at_ms > now then
  join_draw(b)                                                               -- before an opening: the draw
  return finish(b)
end
-- An opening's draw still being placed in the line (tick_close.lua)
-- counts as people waiting: they are ahead of everyone who arrives now.
local waiting = redis.call('ZCARD', b.k.waiting) + in_draw
local direct = admit_directly(b, waiting)                                    -- straight in on the tokens
out[HEAD_WAITING] = join_line(b, direct, waiting)                            -- the others to the tail
return finish(b)

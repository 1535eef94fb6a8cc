-- challenge.lua: the proof of work the caller must bring to enter, for the challenge
-- endpoint, behind the client's rate limits: the queue's challenge_difficulty, or the
-- price of a place on the caller's network when that is higher, up to the ceiling, or a
-- human check instead (networks.lua's price_need, price.go), computed as enter.lua will
-- check it. A challenge serves one enter, so a client gets them at its enter limits (per
-- client, network and site), in buckets of their own (op "challenge"): fetching one
-- spends no enter. One call.
--
-- KEYS[1..4] config HASH, waiting ZSET (its head trims the networks' counts), draw SET
--            (while it holds anyone, counts are not trimmed), arrival rate HASH (arrivals_note)
-- KEYS[5..7] the client's, its network's and its site's challenge rate buckets (STRING,
--            rate_take), or the unused key for a bucket not to be charged
-- KEYS[8]    held ZSET (places set aside at the head, held_floor)
-- KEYS[9..]  the held ZSETs of the caller's network and site (none when the caller is not
--            priced by its networks, or they placed nobody through this replica lately: seen.go)
-- ARGV[1..DEFAULTS] the replica's defaults queue_config reads, then the lane (""); A = DEFAULTS
-- ARGV[A + 1..A + 6] the limits per client, network and site: period_ms (the time one call
--            earns back, fractional; 0: no limit), burst
-- ARGV[A + 7..A + 9] the calls to charge each bucket (0: not asked; local.go let it through)
-- ARGV[A + 10..A + 13] the price: bits (0: none), calm arrivals a second, the ceiling (bits),
--            whether the human check's provider answers (1 or 0)
-- ARGV[A + 14..A + 15] whether the replica placed someone from the caller's network and site lately
-- ARGV[A + 16] flags (enter.lua's): 1 hosting, 2 passed a human check
-- Returns {ALLOWED, difficulty} (0: no proof of work asked), {HUMAN, 0} when a human check
-- is asked instead, or {LIMITED, wait_ms} when the client is over a limit (nothing charged).
local A = DEFAULTS
local now = now_ms()
local wait = take_all({
  {KEYS[5], ARGV[A + 1], ARGV[A + 2], tonumber(ARGV[A + 7])},
  {KEYS[6], ARGV[A + 3], ARGV[A + 4], tonumber(ARGV[A + 8])},
  {KEYS[7], ARGV[A + 5], ARGV[A + 6], tonumber(ARGV[A + 9])},
}, now)
if wait > 0 then
  return {LIMITED, math.ceil(wait)}
end
local cfg = queue_config(KEYS[1])
local price = nil
if #KEYS > 8 then
  local floor = held_floor(KEYS[2], KEYS[8], redis.call('SCARD', KEYS[3]), cfg.opens_at_ms, now)
  local pressure = arrival_pressure(KEYS[4], now, tonumber(ARGV[A + 11]))
  local nets = {{KEYS[9], tonumber(ARGV[A + 14])}}
  if #KEYS > 9 then
    nets[2] = {KEYS[10], tonumber(ARGV[A + 15])}
  end
  price = price_of(nets, floor, tonumber(ARGV[A + 10]), pressure)
end
local flags = tonumber(ARGV[A + 16])
local need = price_need(cfg.challenge_difficulty, price, flags % 2 == 1, flags >= 2, cfg.human_check, tonumber(ARGV[A + 12]), ARGV[A + 13] == '1')
if need == nil then
  return {HUMAN, 0}
end
return {ALLOWED, need}

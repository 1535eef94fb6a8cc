-- codes_add.lua: store some of a batch's invitation codes (their digests),
-- all or none: a digest the queue holds already refuses the lot, and so
-- does going past the queue's bound on codes. The batch redeems nothing
-- until its lane is recorded, after its last codes (codes.go).
--
-- KEYS[1] -> codes HASH (digest -> "<uses left> <batch> <lane>")
-- ARGV[1] -> the value of each: "<uses> <batch> <lane>"
-- ARGV[2] -> the most codes the queue may hold
-- ARGV[3..] -> the digests
-- Returns 0 (stored), the number of digests held already, or -1 (past the bound).
local n = #ARGV - 2
if redis.call('HLEN', KEYS[1]) + n > tonumber(ARGV[2]) then
  return -1
end
local digests, args = {}, {}
for i = 1, n do
  digests[i] = ARGV[i + 2]
  args[2 * i - 1] = ARGV[i + 2]
  args[2 * i] = ARGV[1]
end
local held = 0
for _, v in ipairs(redis.call('HMGET', KEYS[1], unpack(digests))) do
  if v then
    held = held + 1
  end
end
if held > 0 then
  return held
end
redis.call('HSET', KEYS[1], unpack(args))
return 0

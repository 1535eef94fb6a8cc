-- codes_revoke.lua: revoke a batch of invitation codes, then forget its
-- codes a scan step at a time. The first call marks the batch revoked,
-- which redeem.lua reads: from then on none of its codes redeems, however
-- many steps the forgetting takes. Each step scans about 1,000 codes.
--
-- KEYS[1] -> codes HASH (digest -> "<uses left> <batch> <lane>")
-- KEYS[2] -> code batches HASH
-- ARGV[1] -> the batch
-- ARGV[2] -> the scan cursor ("": the first call, which revokes)
-- Returns {status, next cursor ("0": done)}: status 1 revoked (or a step
-- done), 0 no such batch.
local batch = ARGV[1]
if ARGV[2] == '' then
  if redis.call('HEXISTS', KEYS[2], batch .. ':lane') == 0 then
    return {0, '0'}
  end
  if redis.call('HEXISTS', KEYS[2], batch .. ':revoked_ms') == 0 then
    local t = redis.call('TIME')
    redis.call('HSET', KEYS[2], batch .. ':revoked_ms', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  end
end
local cursor = ARGV[2]
if cursor == '' then
  cursor = '0'
end
local step = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 1000)
local gone = {}
local fields = step[2]
for i = 1, #fields, 2 do
  local _, b = string.match(fields[i + 1], '^(%d+) (%S+) ')
  if b == batch then
    gone[#gone + 1] = fields[i]
  end
end
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
end
return {1, step[1]}

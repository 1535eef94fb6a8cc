-- end.lua: end sessions of one person: one (signing out) or all that the
-- caller read of the person's set (an admin's revocation).
--
-- KEYS[1] -> the person's sessions (SET of session ids)
-- KEYS[2..] -> the sessions to end (HASH each)
-- ARGV[i] -> the id of KEYS[i + 1]
-- Returns how many of them were live.
local n = 0
for i = 2, #KEYS do
  n = n + redis.call('DEL', KEYS[i])
  redis.call('SREM', KEYS[1], ARGV[i - 1])
end
return n

-- claim.lua: spend a sign-in's state, once: a replayed state finds it
-- spent.
--
-- KEYS[1] -> the state's mark (STRING "1")
-- ARGV[1] -> how long to keep the mark (ms): as long as the state lives
-- Returns 1 when this call spent it, 0 when it was spent before.
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then
  return 1
end
return 0

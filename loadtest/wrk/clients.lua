-- clients.lua: shared by the wrk scripts that call enter or status. Loaded
-- with dofile after report.lua; defines client_addr(n).
--
-- The server limits enter and status per client address (5/s burst 300
-- and 200/s burst 2000 by default), so a load test whose every request
-- comes from wrk's one address would be a single client over its limit.
-- A crowd comes from many addresses: each script sends its own
-- "X-Forwarded-For: <address>" (a fresh one per enter, a fixed one per
-- user for status), which the server believes only from a trusted proxy:
-- scripts/lib.sh starts it with WAITROOM_TRUSTED_PROXIES set to loopback.
-- Against a server that does not trust wrk's address the header is
-- ignored and every request is one client again.

-- client_addr(n) is a pseudo-random unicast IPv4 address for the integer
-- n >= 0, distinct for every n below 100 * 2^24: the first octet is
-- 11 + n / 2^24 (11 to 110: never 10/8 or loopback), the other three are
-- n mod 2^24 times an odd constant mod 2^24 (a permutation), so
-- neighbouring n fall in different /24s, as a crowd's addresses do.
function client_addr(n)
  local lo = (n % 16777216) * 40503 % 16777216 -- < 2^40: exact in a double
  local hi = 11 + math.floor(n / 16777216) % 100
  return string.format("%d.%d.%d.%d", hi, math.floor(lo / 65536), math.floor(lo / 256) % 256, lo % 256)
end

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
--
-- With WR_CLIENTS=v6 every n is an IPv6 address in a /48 of its own, and
-- the /48s of one run differ from those of every other run in the next
-- two hours (the first group is 2000 + the run's start second mod 8192):
-- each enter is then the first place of its network (/56) and site
-- (/48), so with the price of a place on (WAITROOM_POW_NETWORK_BITS) it
-- asks no proof of work but pays for the counting, as a crowd spread
-- over many networks does. Rounds of a benchmark repeat n, and a network
-- that already holds a place would be asked for proof of work, which wrk
-- does not solve.
local v6 = os.getenv("WR_CLIENTS") == "v6"
local run = os.time() % 8192

function client_addr(n)
  if v6 then
    return string.format("%x:%x:%x::1", 8192 + run, math.floor(n / 65536) % 65536, n % 65536)
  end
  local lo = (n % 16777216) * 40503 % 16777216 -- < 2^40: exact in a double
  local hi = 11 + math.floor(n / 16777216) % 100
  return string.format("%d.%d.%d.%d", hi, math.floor(lo / 65536), math.floor(lo / 256) % 256, lo % 256)
end

-- status-place.lua: GET /api/v1/queues/{QUEUE}/status with
-- "Authorization: Bearer <place_token>", for places already in line: the
-- way an app asks about the place its credential proves. No plain user
-- ids: works on a server without WAITROOM_INSECURE_USER_IDS.
--
--   TOKENS=/tmp/tokens.txt wrk -t1 -c32 -d10s --latency -s loadtest/wrk/status-place.lua http://127.0.0.1:8080
--
-- env: QUEUE (default "default"; the tokens must be for this queue),
--      TOKENS (required): a file of place tokens, one per line, e.g. written
--      by enter-place.lua with TOKENS_OUT.
--
-- Each thread walks all N tokens in a scattered order (i, i + P, i + 2P,
-- ... mod N, P a prime that does not divide N, from a random start), so
-- every place is asked for equally often: the server limits status per
-- place (5/s burst 20 by default), which random picks would breach for
-- some places long before the mean rate per place got there. Keep N above
-- the status rate / 3 or so. Each place asks from its own address,
-- X-Forwarded-For: client_addr(i) for the i-th token (clients.lua), as the
-- server also limits status per client address.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")
dofile(dir .. "clients.lua")

local queue = os.getenv("QUEUE") or "default"
local file = os.getenv("TOKENS") or ""
if file == "" then error("status-place.lua: set TOKENS to a file of place tokens (enter-place.lua TOKENS_OUT)") end

-- Every Lua state (the main one and one per thread) reads the file; the
-- header values are built once here, so a request costs wrk no more than
-- status.lua's.
local auth, xff = {}, {}
for line in assert(io.open(file)):lines() do
  if line ~= "" then
    auth[#auth + 1] = "Bearer " .. line
    xff[#xff + 1] = client_addr(#xff)
  end
end
if #auth == 0 then error("status-place.lua: no tokens in " .. file) end
local step = 7919
if #auth % step == 0 then step = 7907 end

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local path = "/api/v1/queues/" .. queue .. "/status"
local headers = {}
local i = 0

function init(args)
  math.randomseed(os.time() * 1000 + tid)
  i = math.random(0, #auth - 1)
end

function request()
  i = (i + step) % #auth
  headers["Authorization"] = auth[i + 1]
  headers["X-Forwarded-For"] = xff[i + 1]
  return wrk.format("GET", path, headers)
end

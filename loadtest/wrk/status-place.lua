-- status-place.lua: GET /api/v1/queues/{QUEUE}/status with
-- "Authorization: Bearer <place_token>", for places already in line: the
-- way an app asks about the place its credential proves. No plain user
-- ids: works on a server without WAITROOM_INSECURE_USER_IDS.
--
--   TOKENS=/tmp/tokens.txt wrk -t1 -c32 -d10s --latency -s loadtest/wrk/status-place.lua http://127.0.0.1:8080
--
-- env: QUEUE (default "default"; the tokens must be for this queue),
--      TOKENS (required): a file of place tokens, one per line, e.g. written
--      by enter-place.lua with TOKENS_OUT; each request uses one of them,
--      chosen uniformly at random.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")

local queue = os.getenv("QUEUE") or "default"
local file = os.getenv("TOKENS") or ""
if file == "" then error("status-place.lua: set TOKENS to a file of place tokens (enter-place.lua TOKENS_OUT)") end

-- Every Lua state (the main one and one per thread) reads the file; the
-- headers are built once here, so a request costs wrk no more than
-- status.lua's.
local auth = {}
for line in assert(io.open(file)):lines() do
  if line ~= "" then auth[#auth + 1] = "Bearer " .. line end
end
if #auth == 0 then error("status-place.lua: no tokens in " .. file) end

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local path = "/api/v1/queues/" .. queue .. "/status"
local headers = {}

function init(args)
  math.randomseed(os.time() * 1000 + tid)
end

function request()
  headers["Authorization"] = auth[math.random(1, #auth)]
  return wrk.format("GET", path, headers)
end

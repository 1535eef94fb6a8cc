-- status.lua: GET /api/v1/queues/{QUEUE}/status for users already in line.
-- Plain user ids: the server must run with WAITROOM_INSECURE_USER_IDS=true
-- (else 400 user_ids_disabled); status-place.lua is the credential flow.
--
--   ID_PREFIX=bench- IDS=100000 wrk -t2 -c64 -d10s --latency -s loadtest/wrk/status.lua http://127.0.0.1:8080
--
-- env: QUEUE (default "default"), ID_PREFIX (default "bench-"),
--      IDS = N (required): each request asks for ID_PREFIX..n, n uniform in
--      [0, N). Fill the line first, e.g. with enter.lua (it prints N).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")

local queue = os.getenv("QUEUE") or "default"
local prefix = os.getenv("ID_PREFIX") or "bench-"
local ids = tonumber(os.getenv("IDS") or "0")
if ids < 1 then error("status.lua: set IDS to the number of users in line") end

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local base = "/api/v1/queues/" .. queue .. "/status?user_id=" .. prefix

function init(args)
  math.randomseed(os.time() * 1000 + tid)
end

function request()
  return wrk.format("GET", base .. math.random(0, ids - 1))
end

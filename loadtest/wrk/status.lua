-- status.lua: GET /api/v1/queues/{QUEUE}/status for users already in line.
-- Plain user ids: the server must run with WAITROOM_INSECURE_USER_IDS=true
-- (else 400 user_ids_disabled); status-place.lua is the credential flow.
--
--   ID_PREFIX=bench- IDS=100000 wrk -t2 -c64 -d10s --latency -s loadtest/wrk/status.lua http://127.0.0.1:8080
--
-- env: QUEUE (default "default"), ID_PREFIX (default "bench-"),
--      IDS = N (required): the requests ask for ID_PREFIX..n, n in [0, N).
--      Fill the line first, e.g. with enter.lua (it prints N).
--
-- Each thread walks all N ids in a scattered order (n, n + P, n + 2P, ...
-- mod N, P a prime that does not divide N, from a random start), so every
-- user is asked for equally often: the server limits status per place (5/s
-- burst 20 by default), which random picks would breach for some users
-- long before the mean rate per user got there. Keep N above the status
-- rate / 3 or so. Each user asks from its own address, X-Forwarded-For:
-- client_addr(n) (clients.lua, the address enter.lua entered it from), as
-- the server also limits status per client address.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")
dofile(dir .. "clients.lua")

local queue = os.getenv("QUEUE") or "default"
local prefix = os.getenv("ID_PREFIX") or "bench-"
local ids = tonumber(os.getenv("IDS") or "0")
if ids < 1 then error("status.lua: set IDS to the number of users in line") end
local step = 7919
if ids % step == 0 then step = 7907 end

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local base = "/api/v1/queues/" .. queue .. "/status?user_id=" .. prefix
local headers = {}
local n = 0

function init(args)
  math.randomseed(os.time() * 1000 + tid)
  n = math.random(0, ids - 1)
end

function request()
  n = (n + step) % ids
  headers["X-Forwarded-For"] = client_addr(n)
  return wrk.format("GET", base .. n, headers)
end

-- enter.lua: POST /api/v1/queues/{QUEUE}/enter, a new user id per request.
-- Plain user ids: the server must run with WAITROOM_INSECURE_USER_IDS=true
-- (else 400 user_ids_disabled); enter-place.lua is the credential flow.
--
--   WRK_THREADS=2 wrk -t2 -c64 -d10s --latency -s loadtest/wrk/enter.lua http://127.0.0.1:8080
--
-- env: QUEUE (default "default"), ID_PREFIX (default "bench-"),
--      WRK_THREADS = the -t value (default 256; see below),
--      WRK_CONNECTIONS = the -c value (optional; see below).
--
-- Thread i (0-based) sends ids ID_PREFIX..(i + WRK_THREADS*k) for k = 0,1,2...
-- so ids never repeat as long as -t <= WRK_THREADS, and with WRK_THREADS
-- equal to -t they are dense: done() then prints
--   ENTER_IDS prefix=bench- dense_below=N
-- meaning every id ID_PREFIX..n with n < N was sent; the last request of
-- each connection (WRK_CONNECTIONS/-t per thread) is left out, as it may
-- have been cut off at the end. status.lua reads those ids back.
--
-- Each request comes from its own client address, X-Forwarded-For:
-- client_addr(n) for id n (clients.lua), as a crowd's enters do; the
-- server believes it only from a trusted proxy (scripts/lib.sh trusts
-- loopback). status.lua asks for id n from the same address.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")
dofile(dir .. "clients.lua")

local queue = os.getenv("QUEUE") or "default"
local prefix = os.getenv("ID_PREFIX") or "bench-"
local stride = tonumber(os.getenv("WRK_THREADS") or "256")

-- setup runs in the main Lua state once per thread, before that thread starts.
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local path = "/api/v1/queues/" .. queue .. "/enter"
local headers = { ["Content-Type"] = "application/json" }
-- globals, so that done() can read them with thread:get
sent = 0

function init(args)
  if tid >= stride then
    error(string.format("enter.lua: -t exceeds WRK_THREADS=%d, ids would repeat", stride))
  end
end

function request()
  local n = tid + stride * sent
  sent = sent + 1
  headers["X-Forwarded-For"] = client_addr(n)
  return wrk.format("POST", path, headers, '{"user_id":"' .. prefix .. n .. '"}')
end

function report_extra()
  local min = nil
  for _, t in ipairs(threads) do
    local n = t:get("sent")
    if min == nil or n < min then min = n end
  end
  local cut = math.ceil(tonumber(os.getenv("WRK_CONNECTIONS") or "0") / #threads)
  local dense = 0
  if #threads == stride and min then
    dense = stride * math.max(0, min - cut)
  end
  io.write(string.format("ENTER_IDS prefix=%s dense_below=%d\n", prefix, dense))
end

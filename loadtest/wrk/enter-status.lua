-- enter-status.lua: a crowd's mix of enter and status with place
-- credentials, as apps use the service: POST /api/v1/queues/{QUEUE}/enter
-- with body {} makes a new place (the server picks the member and answers
-- with its place_token), then that place asks GET .../status with
-- "Authorization: Bearer <place_token>" STATUS_PER_ENTER times. No plain
-- user ids: works against the compose stack as it ships.
--
--   wrk -t1 -c64 -d30s --latency -s loadtest/wrk/enter-status.lua http://localhost:8080
--
-- env: QUEUE (default "default"),
--      STATUS_PER_ENTER (default 10, at most 20: the server limits status
--      per place to 5/s with a burst of 20 by default, and a place here
--      may ask all its calls within a second).
--
-- Each wrk thread keeps the places its enters made in a list and takes the
-- next request from it: a status for the oldest place with calls left, or
-- an enter when none has. So the mix is 1 enter to STATUS_PER_ENTER status
-- calls, whatever the connections' interleaving. An enter that fails makes
-- no place; the next request is another enter.
--
-- No X-Forwarded-For: behind the stack's load balancer the replicas take
-- the client's address from nginx ($remote_addr), never from the client,
-- so every wrk connection is one client (scripts/bench-stack.sh says how
-- it measures with that).
--
-- Besides report.lua's WRK_RESULT line, done() prints
--   ENTER_STATUS enter=N status=N ok=N r429=N r5xx=N other=N
-- counted from the answers (N: requests whose answer came).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local queue = os.getenv("QUEUE") or "default"
local per = tonumber(os.getenv("STATUS_PER_ENTER") or "10")
if not per or per < 0 or per > 20 or per % 1 ~= 0 then
  error("enter-status.lua: STATUS_PER_ENTER must be an integer from 0 to 20")
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

local enter_path = "/api/v1/queues/" .. queue .. "/enter"
local status_path = "/api/v1/queues/" .. queue .. "/status"
local enter_headers = { ["Content-Type"] = "application/json" }
local status_headers = {}

-- places[head..tail] are "Bearer <token>" of places with calls left;
-- left[i] is how many. response() is not told which request an answer is
-- for (the thread's connections take turns), but only enter answers carry
-- a place_token, so the body says.
local places, left = {}, {}
local head, tail = 1, 0

-- Counters, globals of each thread's Lua state (read with thread:get).
enters, statuses, ok, r429, r5xx, other = 0, 0, 0, 0, 0, 0

function request()
  if head <= tail then
    local i = head
    status_headers["Authorization"] = places[i]
    left[i] = left[i] - 1
    if left[i] == 0 then
      places[i], left[i] = nil, nil
      head = head + 1
    end
    statuses = statuses + 1
    return wrk.format("GET", status_path, status_headers)
  end
  enters = enters + 1
  return wrk.format("POST", enter_path, enter_headers, "{}")
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    ok = ok + 1
  elseif status == 429 then
    r429 = r429 + 1
  elseif status >= 500 then
    r5xx = r5xx + 1
  else
    other = other + 1
  end
  if status == 200 and per > 0 then
    -- Only an enter's answer carries place_token.
    local t = body:match('"place_token":"([^"]+)"')
    if t then
      tail = tail + 1
      places[tail], left[tail] = "Bearer " .. t, per
    end
  end
end

function report_extra()
  local sum = { enters = 0, statuses = 0, ok = 0, r429 = 0, r5xx = 0, other = 0 }
  for _, t in ipairs(threads) do
    for k in pairs(sum) do
      sum[k] = sum[k] + t:get(k)
    end
  end
  io.write(string.format("ENTER_STATUS enter=%d status=%d ok=%d r429=%d r5xx=%d other=%d\n",
    sum.enters, sum.statuses, sum.ok, sum.r429, sum.r5xx, sum.other))
end

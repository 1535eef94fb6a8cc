-- enter-place.lua: POST /api/v1/queues/{QUEUE}/enter with body {}, a new
-- place per request, as an app without a place credential enters: the
-- server picks the member id and answers the ticket with its place_token
-- (and the same credential as the cookie wr_place_{QUEUE}, which wrk
-- ignores, so every request is a new place). No plain user ids: works on a
-- server without WAITROOM_INSECURE_USER_IDS.
--
--   wrk -t1 -c32 -d10s --latency -s loadtest/wrk/enter-place.lua http://127.0.0.1:8080
--   TOKENS_OUT=/tmp/tokens.txt wrk ... -s loadtest/wrk/enter-place.lua ...
--
-- env: QUEUE (default "default"),
--      TOKENS_OUT (optional): write the place_token of every 200 answer to
--      this file, one per line, for status-place.lua. Only then is the
--      response() callback defined, which makes wrk read every body and
--      costs the load generator CPU; leave it unset for measured runs.
--      done() then prints
--        PLACE_TOKENS file=<TOKENS_OUT> count=N
--
-- Each request comes from its own client address, X-Forwarded-For:
-- client_addr(tid + 256k) for the k-th request of thread tid (clients.lua),
-- as a crowd's enters do: the server limits enter per client address (5/s
-- burst 300 by default) and believes the header only from a trusted proxy
-- (scripts/lib.sh trusts loopback). The addresses repeat from one wrk run
-- to the next: one enter per address and run is well within the limit.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")
dofile(dir .. "clients.lua")

local queue = os.getenv("QUEUE") or "default"
local out = os.getenv("TOKENS_OUT") or ""

-- setup runs in the main Lua state once per thread, before that thread starts.
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local path = "/api/v1/queues/" .. queue .. "/enter"
local headers = { ["Content-Type"] = "application/json" }
local sent = 0

function init(args)
  if tid >= 256 then error("enter-place.lua: at most 256 threads") end
end

function request()
  headers["X-Forwarded-For"] = client_addr(tid + 256 * sent)
  sent = sent + 1
  return wrk.format("POST", path, headers, "{}")
end

if out ~= "" then
  -- tokens is a global of each thread's Lua state, so that report_extra
  -- (main state, after the run) can copy it with thread:get: wrk has no
  -- per-thread hook at the end of a run where a thread could write it.
  tokens = {}

  function response(status, headers, body)
    if status == 200 then
      local t = body:match('"place_token":"([^"]+)"')
      if t then tokens[#tokens + 1] = t end
    end
  end

  function report_extra()
    local f = assert(io.open(out, "w"))
    local n = 0
    for _, t in ipairs(threads) do
      local got = t:get("tokens")
      for i = 1, #got do
        f:write(got[i], "\n")
      end
      n = n + #got
    end
    f:close()
    io.write(string.format("PLACE_TOKENS file=%s count=%d\n", out, n))
  end
end

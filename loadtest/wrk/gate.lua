-- gate.lua: GET URL_PATH with an entry pass in the cookie wr_pass_{QUEUE},
-- as an admitted browser asks for the order page behind a gate (waitroom's
-- reverse proxy, or nginx auth_request + /gate/verify). scripts/bench-gate.sh
-- sends this same request to every scenario, gated or not, so they differ
-- only in what answers it.
--
--   PASSES=/tmp/passes.txt URL_PATH=/ wrk -t2 -c64 -d5s --latency -s loadtest/wrk/gate.lua http://127.0.0.1:8080
--
-- env: PASSES (required): a file of entry passes, one per line (the "pass"
--      of ENTERED enter answers). One pass: every request carries it, and
--      wrk builds the request once (one admitted user in a hot loop). More:
--      each request carries the next pass in the file, each thread starting
--      at its own offset (many admitted users); wrk then runs request() per
--      request, a little more load-generator CPU.
--      URL_PATH (default "/"), QUEUE (default "default": the cookie's name).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")

local queue = os.getenv("QUEUE") or "default"
local path = os.getenv("URL_PATH") or "/"
local file = os.getenv("PASSES") or ""
if file == "" then error("gate.lua: set PASSES to a file of entry passes, one per line") end

-- Every Lua state (the main one and one per thread) reads the file and
-- builds its cookie headers once.
local cookies = {}
for line in assert(io.open(file)):lines() do
  if line ~= "" then cookies[#cookies + 1] = "wr_pass_" .. queue .. "=" .. line end
end
if #cookies == 0 then error("gate.lua: no passes in " .. file) end

wrk.method = "GET"
wrk.path = path
wrk.headers["Cookie"] = cookies[1]

if #cookies > 1 then
  local threads = {}
  function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
  end

  local next_pass = 1
  local headers = {}
  function init(args)
    next_pass = (tid * 7919) % #cookies + 1
  end

  function request()
    headers["Cookie"] = cookies[next_pass]
    next_pass = next_pass % #cookies + 1
    return wrk.format("GET", path, headers)
  end
end

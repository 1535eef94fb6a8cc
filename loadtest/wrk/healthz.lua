-- healthz.lua: GET /healthz, the baseline for scripts/bench.sh (HTTP, routing
-- and middleware cost, no Redis).
--   wrk -t2 -c64 -d10s --latency -s loadtest/wrk/healthz.lua http://127.0.0.1:8080
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")

wrk.method = "GET"
wrk.path = "/healthz"

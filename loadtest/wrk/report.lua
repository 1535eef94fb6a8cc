-- report.lua: shared by the wrk scripts here. Loaded with dofile (see the
-- top of each script); defines done(), which prints one machine-readable
-- line that scripts/bench.sh and scripts/bench-pair.sh parse:
--
--   WRK_RESULT requests=N duration_us=N rps=F p50_us=N p90_us=N p99_us=N
--              mean_us=F non2xx=N socket_errors=N
--
-- Latency is wrk's: measured per request on a closed loop of -c connections.
-- A script that defines report_extra() prints more lines after it
-- (enter.lua: ENTER_IDS, enter-place.lua: PLACE_TOKENS).

function done(summary, latency, requests)
  local e = summary.errors
  local rps = summary.requests / (summary.duration / 1e6)
  io.write(string.format(
    "WRK_RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d mean_us=%.1f non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration, rps,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
    e.status, e.connect + e.read + e.write + e.timeout))
  if report_extra then report_extra() end
end

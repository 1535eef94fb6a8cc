#!/usr/bin/env bash
# million.sh: "holding a million". One queue at the defaults
# (refill 10 every 5 s, abandon after 2 min) is filled with USERS places
# through the HTTP API, and every place then polls its status as the poll
# policy tells it (lab/cmd/wr-million: open loop, next call at the last answer
# plus its poll_after_ms). After SETTLE it measures for DURATION: status
# rate against the rate the policy implies, p50/p99/max, 503s, the
# generator's own schedule lag, how late admitted users learned of their
# admission, CPU per status call of the server, redis-server and the
# generator (utime+stime deltas from /proc/PID/stat), and Redis memory per
# waiting user after the fill. The server runs with its default rate
# limits, and each user calls from an address of its own (X-Forwarded-For,
# which the server believes from loopback: lib.sh), as a real crowd does.
#
#   scripts/million.sh                        # 1 M users, pinned (lib.sh)
#   USERS=100000 DURATION=60s scripts/million.sh
#   WR_PIN=0 scripts/million.sh               # unpinned
#   USERS=500000 BURST=200000 BURST_SECONDS=20 DURATION=60s scripts/million.sh
#                                             # an opening burst into a held line
#
# About 2 min of fill (at ~8,000 enters a second), SETTLE (60 s: the
# longest poll interval, so every place has polled since the fill ended)
# and DURATION (120 s: 24 ticks): under 5 minutes with the defaults.
#
# Pinning (lib.sh, on by default with 2+ CPUs): the server and Redis on
# CPU 1, the generator on CPU 0, as scripts/bench.sh; so the server runs
# with GOMAXPROCS=1 and shares its core with Redis.
#
# Opening burst (BURST > 0): from the window's start, BURST new users enter
# open loop, evenly over BURST_SECONDS, on BURST_CONNS connections, while
# the USERS already in line poll; then poll as told. After the window the
# generator checks every acknowledged place in Redis (in the line at the
# arrival number its credential carries, or admitted; none twice; FIFO
# among enters that did not overlap). Targets: enter p99 250 ms, no 503.
#
# Connections are modelled as a browser's (lab/cmd/wr-million -idle-timeout):
# a user's call reuses its connection when it comes within the server's
# idle timeout (IDLE_TIMEOUT, default the server's 75s) of its last one,
# and opens a new one otherwise.
#
# Env: USERS (1000000), SETTLE (60s), DURATION (120s), CONNS (2048 status
# connections), FILL_CONNS (64), BURST (0), BURST_SECONDS (20),
# BURST_CONNS (1024), IDLE_TIMEOUT (75s), QUEUE (default), LOG_LEVEL (warn, as
# bench.sh: no access log line per request), RESULTS_DIR (keep the report
# there), plus WAITROOM_BIN, WR_PIN, WR_SERVER_CPUS, WR_REDIS_CPUS,
# WR_LOAD_CPUS, WR_KEEP (lib.sh).
# Exits 2 when a target was missed (status p99 > 100 ms, a 503, or a user
# within the next 10 ticks learning of its admission more than one
# interval late), 1 on any other failure.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USERS=${USERS:-1000000}
SETTLE=${SETTLE:-60s}
DURATION=${DURATION:-120s}
CONNS=${CONNS:-2048}
FILL_CONNS=${FILL_CONNS:-64}
QUEUE=${QUEUE:-default}
LOG_LEVEL=${LOG_LEVEL:-warn}
BURST=${BURST:-0}
BURST_SECONDS=${BURST_SECONDS:-20}
BURST_CONNS=${BURST_CONNS:-1024}
IDLE_TIMEOUT=${IDLE_TIMEOUT:-75s}

# Every connection is a descriptor in the generator and in the server.
need=$((CONNS + FILL_CONNS + BURST_CONNS + 1024))
if (($(ulimit -n) < need)); then
	ulimit -n 1048576 2>/dev/null || ulimit -n "$need" 2>/dev/null ||
		wr_die "ulimit -n is $(ulimit -n), below the $need descriptors the run needs"
fi

command -v redis-cli >/dev/null || wr_die "redis-cli not found"

wr_init
wr_build
wr_log "building lab/cmd/wr-million"
(cd "$WR_ROOT/lab" && go build -o "$WR_TMP/wr-million" ./cmd/wr-million) || wr_die "go build failed"
wr_start_redis
# The defaults of the service (refill, interval, abandon_after, the rate
# limits) on purpose: the poll policy's load is what is measured. Place
# credentials, not plain ids, as in production.
wr_start_server WAITROOM_QUEUES="$QUEUE" WAITROOM_LOG_LEVEL="$LOG_LEVEL" WAITROOM_IDLE_TIMEOUT="$IDLE_TIMEOUT"

OUT=${RESULTS_DIR:-$WR_TMP}
mkdir -p "$OUT"
REPORT=$OUT/million.txt
wr_log "pinning: $WR_PINNING; $USERS users, settle $SETTLE, window $DURATION, burst $BURST over ${BURST_SECONDS}s; ulimit -n $(ulimit -n)"
rc=0
# Fill (up to 10 min), settle, window, and 2 min for the end and the checks.
limit=$((600 + $(wr_seconds "$SETTLE") + $(wr_seconds "$DURATION") + 120))
timeout "$limit" "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-million" -url "$WR_BASE_URL" -queue "$QUEUE" \
	-users "$USERS" -settle "$SETTLE" -duration "$DURATION" -conns "$CONNS" -fill-conns "$FILL_CONNS" \
	-server-pid "$WR_SERVER_PID" -redis-pid "$WR_REDIS_PID" -redis-addr "127.0.0.1:$WR_REDIS_PORT" \
	-idle-timeout "$IDLE_TIMEOUT" -burst "$BURST" -burst-for "${BURST_SECONDS}s" -burst-conns "$BURST_CONNS" \
	-clk-tck "$(getconf CLK_TCK)" | tee "$REPORT" || rc=$?
errors=$(grep -c 'level=ERROR' "$WR_TMP/server.log" || true)
wr_log "server log: $errors error lines; redis-server: $(wr_redis INFO memory | tr -d '\r' | grep '^used_memory_human:')"
echo "pinning: $WR_PINNING" >>"$REPORT"
exit "$rc"

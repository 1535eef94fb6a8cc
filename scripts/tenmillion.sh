#!/usr/bin/env bash
# tenmillion.sh: ten million places in one queue on this box
# (docs/SCALE.md "Ten million, measured on this box").
#
#   scripts/tenmillion.sh                                  # 10 M, an opening of 1 M in 60 s
#   PLACES=2000000 MARKS=1000000,2000000 BURST=200000 BURST_SECONDS=12 scripts/tenmillion.sh
#
# Steps, all against a private redis-server (no RDB, no AOF) started here:
#   1. fill   PLACES places enter one queue through the real queue.Store.Enter,
#             in process (lab/cmd/wr-tenmillion -mode fill), from WORKERS
#             goroutines, so that the group commit gathers them into large
#             enter.lua calls: fill time and rate, and Redis used_memory per
#             place at each of MARKS.
#   2. scripts  redis-server's CPU (/proc/PID/stat delta ÷ calls) of
#             snapshot.lua (Store.RefreshSnapshot, as every replica calls it
#             about once a second) and of tick.lua (Store.Tick within the
#             interval, the call a replica makes each second; and applied,
#             admitting 10), SCRIPT_CALLS calls each, with INFO commandstats
#             as a second view. The applied ticks admit and drop places at
#             the head; the line is then topped up to PLACES again.
#   3. burst  the real server (the secure default: place credentials, default
#             limits, metrics on; loopback trusted as a proxy, lib.sh) and
#             BURST enters into the line through its API, open loop, due
#             evenly over BURST_SECONDS, on BURST_CONNS connections, each from
#             an address of its own (X-Forwarded-For): the rate reached, enter
#             p50/p99, CPU per enter of waitroom and redis-server, each core's
#             busy share (which one saturated), then every acknowledged place
#             checked in Redis (0 lost or duplicated, FIFO kept). Nobody
#             polls status during it: far back, the page reads the cached
#             line document (web/static/waiting-line.js).
#   4. polls  nginx with the shipped deploy/nginx/waitroom.conf in front
#             (scripts/line-bench.sh's helpers), and for POLL_DURATION each:
#             GET /line through the cache and, for comparison, far-back status
#             with the burst's credentials through nginx: req/s, CPU µs per
#             poll of nginx, waitroom and redis-server, and the requests that
#             reached the origin per second.
#
# Pinning (lib.sh, on with 2+ CPUs): redis-server, waitroom and nginx on
# WR_SERVER_CPUS (CPU 1); the filler, the burst's generator and wrk on
# WR_LOAD_CPUS (CPU 0).
#
# Memory: ~1.3 GB of Redis for 10 M places, ~0.3 GB in the burst's
# generator. Time: the fill (about 3-6 min for 10 M here), a few s of
# scripts, BURST_SECONDS plus the check (~30 s), 2 × POLL_DURATION; each
# step is bounded by timeout. Everything started is stopped at the end.
#
# Env: PLACES (10000000), MARKS (1000000,5000000,10000000), WORKERS (4096),
# SCRIPT_CALLS (2000), BURST (1000000; 0: no burst nor status polls),
# BURST_SECONDS (60), BURST_CONNS (1024), POLL_DURATION (30s), POLL_CONNS
# (64, as line-bench.sh: within nginx's upstream keepalive 64), QUEUE (default), LOG_LEVEL (warn), RESULTS_DIR (keep the report
# there), NGINX, and lib.sh's WAITROOM_BIN, WR_PIN, WR_SERVER_CPUS,
# WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP. Exits 1 on any failure, the burst's
# check (a place lost, misplaced or twice, FIFO broken) included.
set -euo pipefail
LB_LIB=1
# shellcheck source=scripts/line-bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/line-bench.sh"

PLACES=${PLACES:-10000000}
MARKS=${MARKS:-1000000,5000000,10000000}
WORKERS=${WORKERS:-4096}
SCRIPT_CALLS=${SCRIPT_CALLS:-2000}
BURST=${BURST:-1000000}
BURST_SECONDS=${BURST_SECONDS:-60}
BURST_CONNS=${BURST_CONNS:-1024}
POLL_DURATION=${POLL_DURATION:-30s}
POLL_CONNS=${POLL_CONNS:-64}
LOG_LEVEL=${LOG_LEVEL:-warn}
command -v wrk >/dev/null || wr_die "wrk not found (scripts/install-tools.sh bench)"
need=$((BURST_CONNS + POLL_CONNS + 4096))
if (($(ulimit -n) < need)); then
	ulimit -n 1048576 2>/dev/null || ulimit -n "$need" 2>/dev/null || wr_die "ulimit -n is $(ulimit -n), below $need"
fi

# core_busy: "busy all" clock ticks of every CPU from /proc/stat, one line each.
core_busy() { awk '/^cpu[0-9]/ { b = $2 + $3 + $4 + $7 + $8; a = b + $5 + $6; print $1, b, a }' /proc/stat; }

# core_share BEFORE AFTER: each CPU's busy share between two core_busy.
core_share() {
	paste -d' ' <(echo "$1") <(echo "$2") |
		awk '{ printf "%s %.0f%%  ", $1, 100 * ($5 - $2) / (($6 - $3) > 0 ? ($6 - $3) : 1) } END { print "" }'
}

# evalsha_calls: INFO commandstats' script calls so far (FCALL, the
# queue's scripts, and EVALSHA, older builds').
evalsha_calls() {
	wr_redis INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\(evalsha\|fcall\):calls=\([0-9]*\),.*/\2/p' |
		awk '{ n += $1 } END { print n + 0 }'
}

wr_init
wr_build
wr_log "building lab/cmd/wr-tenmillion"
(cd "$WR_ROOT/lab" && go build -o "$WR_TMP/wr-tenmillion" ./cmd/wr-tenmillion) || wr_die "go build failed"
wr_start_redis
OUT=${RESULTS_DIR:-$WR_TMP}
mkdir -p "$OUT"
REPORT=$OUT/tenmillion.txt
HZ=$(getconf CLK_TCK)
echo "tenmillion: $PLACES places in queue $QUEUE; pinning: $WR_PINNING; $(nproc) CPUs; redis $(redis-server --version | awk '{print $3}')" | tee "$REPORT"

# 1. fill
wr_log "fill: $PLACES places through queue.Store.Enter"
r0=$(wr_cpu_ticks "$WR_REDIS_PID")
timeout 3600 "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-tenmillion" -mode fill -redis-addr "127.0.0.1:$WR_REDIS_PORT" \
	-queue "$QUEUE" -places "$PLACES" -workers "$WORKERS" -marks "$MARKS" | tee -a "$REPORT"
r1=$(wr_cpu_ticks "$WR_REDIS_PID")
echo "fill: redis-server CPU $(((r1 - r0) / HZ)) s over the fill; $(wr_redis INFO memory | tr -d '\r' | grep -E '^(used_memory_human|used_memory_rss_human):' | paste -sd' ')" | tee -a "$REPORT"

# 2. scripts
wr_log "scripts: snapshot.lua and tick.lua at $PLACES"
timeout 600 "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-tenmillion" -mode scripts -redis-addr "127.0.0.1:$WR_REDIS_PORT" \
	-redis-pid "$WR_REDIS_PID" -clk-tck "$HZ" -queue "$QUEUE" -n "$SCRIPT_CALLS" | tee -a "$REPORT"
# The scripts' applied ticks admitted and dropped places at the head: top
# the line up to PLACES again (the fill counts what is there).
timeout 600 "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-tenmillion" -mode fill -redis-addr "127.0.0.1:$WR_REDIS_PORT" \
	-queue "$QUEUE" -places "$PLACES" -workers "$WORKERS" -marks "$PLACES" | sed 's/^/top-up: /' | tee -a "$REPORT"
idle0=$(wr_cpu_ticks "$WR_REDIS_PID")
sleep 5
idle1=$(wr_cpu_ticks "$WR_REDIS_PID")
echo "idle redis-server (nothing connected): $(awk -v t="$((idle1 - idle0))" -v hz="$HZ" 'BEGIN { printf "%.2f", 100 * t / hz / 5 }') % of a core" | tee -a "$REPORT"

# 3. the server, nginx, and the burst
LB_METRICS=127.0.0.1:$(wr_free_port)
wr_start_server WAITROOM_QUEUES="$QUEUE" WAITROOM_LOG_LEVEL="$LOG_LEVEL" WAITROOM_METRICS_ADDR="$LB_METRICS"
lb_start_nginx "127.0.0.1:$WR_SERVER_PORT"
sleep 3
s0=$(wr_cpu_ticks "$WR_REDIS_PID")
w0=$(wr_cpu_ticks "$WR_SERVER_PID")
sleep 10
s1=$(wr_cpu_ticks "$WR_REDIS_PID")
w1=$(wr_cpu_ticks "$WR_SERVER_PID")
echo "held, nobody calling (the server's own snapshot reads and ticks): redis-server $(awk -v t="$((s1 - s0))" -v hz="$HZ" 'BEGIN { printf "%.2f", 100 * t / hz / 10 }') % of a core, waitroom $(awk -v t="$((w1 - w0))" -v hz="$HZ" 'BEGIN { printf "%.2f", 100 * t / hz / 10 }') %" | tee -a "$REPORT"

rc=0
if ((BURST > 0)); then
	wr_log "burst: $BURST enters over ${BURST_SECONDS}s through the API"
	c0=$(core_busy)
	w0=$(wr_cpu_ticks "$WR_SERVER_PID")
	r0=$(wr_cpu_ticks "$WR_REDIS_PID")
	e0=$(evalsha_calls)
	t0=$(date +%s.%N)
	timeout $((BURST_SECONDS + 600)) "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-tenmillion" -mode burst -url "$WR_BASE_URL" \
		-redis-addr "127.0.0.1:$WR_REDIS_PORT" -queue "$QUEUE" -places "$BURST" -burst-for "${BURST_SECONDS}s" \
		-conns "$BURST_CONNS" -tokens "$WR_TMP/burst-tokens.txt" >"$WR_TMP/burst.txt" || rc=$?
	# The CPU figures are of the sends and answers, taken before the check
	# (which runs after the last answer); the check's own reads are a few
	# pipelines, so they are included but small.
	t1=$(date +%s.%N)
	w1=$(wr_cpu_ticks "$WR_SERVER_PID")
	r1=$(wr_cpu_ticks "$WR_REDIS_PID")
	e1=$(evalsha_calls)
	c1=$(core_busy)
	tee -a "$REPORT" <"$WR_TMP/burst.txt"
	acked=$(sed -n 's/^burst: .* \([0-9]*\) answered 200.*/\1/p' "$WR_TMP/burst.txt")
	awk -v n="${acked:-0}" -v w="$((w1 - w0))" -v r="$((r1 - r0))" -v e="$((e1 - e0))" -v hz="$HZ" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN {
		if (n == 0) exit
		printf "burst: over %.1f s (sends, answers and the check): waitroom %.1f µs CPU an enter (%.0f %% of a core), redis-server %.1f µs (%.0f %%); %d script calls, %.1f enters a call\n",
			s, w * 1e6 / hz / n, 100 * w / hz / s, r * 1e6 / hz / n, 100 * r / hz / s, e, (e > 0 ? n / e : 0)
	}' | tee -a "$REPORT"
	echo "burst: busy share of each core over it: $(core_share "$c0" "$c1")" | tee -a "$REPORT"
	echo "after the burst: $(wr_redis INFO memory | tr -d '\r' | grep '^used_memory_human:')" | tee -a "$REPORT"
	((rc == 0)) || wr_log "burst: the generator exited $rc (the check failed or the run broke)"
fi

# 4. far-back polls through the nginx cache
if [[ -s $WR_TMP/burst-tokens.txt ]]; then
	tokens=$WR_TMP/burst-tokens.txt
else
	tokens=$WR_TMP/none.txt
	seq 100000 >"$tokens"
fi
lb_write_lua "$tokens"
lb_load line /line 3s "$POLL_CONNS" >/dev/null
{
	echo "polls: through nginx (deploy/nginx/waitroom.conf, one worker), the line about $((PLACES + BURST)) long, $POLL_CONNS wrk connections, $POLL_DURATION each; status with the burst's credentials (far back)"
	lb_header
} | tee -a "$REPORT"
lb_load line /line "$POLL_DURATION" "$POLL_CONNS" | tee -a "$REPORT"
if [[ $tokens == "$WR_TMP/burst-tokens.txt" ]]; then
	lb_load status /status "$POLL_DURATION" "$POLL_CONNS" | tee -a "$REPORT"
fi
errors=$(grep -c 'level=ERROR' "$WR_TMP/server.log" || true)
echo "server log: $errors error lines" | tee -a "$REPORT"
# 1 when the burst's generator failed (its check included): the figures
# above are then not to be trusted.
((rc == 0)) || exit 1

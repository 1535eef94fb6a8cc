#!/usr/bin/env bash
# bench.sh: one-command, side-by-side benchmark of the hot paths on this
# machine, in one run:
#
#   scripts/bench.sh                       # defaults below
#   THREADS=2 CONNS=64 DURATION=10s REPEAT=3 scripts/bench.sh
#
# It builds ./cmd/waitroom, starts a private redis-server (no persistence)
# and the server on free loopback ports, with a 1h refill interval and refill
# size 1 so that every enter lands in the line and the line only grows, and
# with WAITROOM_INSECURE_USER_IDS=true, as the scenarios use plain user ids
# (scripts/bench-pair.sh MODE_B=place measures the place credential). Then
# it drives the same fixed closed-loop load with wrk at
#   healthz  GET /healthz               baseline: HTTP + middleware, no Redis
#   enter    POST .../enter             one new user id per request
#   status   GET .../status?user_id=    every user already in the line in turn
# each user from its own client address (X-Forwarded-For, which the server
# believes from loopback: lib.sh), as the server limits enter and status
# per client address and status per place (loadtest/wrk/clients.lua);
# interleaved (healthz, enter, status, healthz, ...) REPEAT times, and prints
# per scenario the medians over the repeats of: req/s, p50, p99, server and
# Redis CPU time per request (utime+stime deltas from /proc/PID/stat), Redis
# INFO commandstats usec per script call and script calls per request (FCALL,
# the queue's scripts; EVALSHA, older builds' and small scripts' besides),
# plus the enter/healthz and status/healthz ratios; then every command in the
# last enter and status runs' commandstats (those run inside scripts too).
#
# Why wrk and not k6: for raw throughput the load generator must cost far less
# CPU per request than the server under test, since both share this machine.
# wrk (C, epoll, Lua only to build requests) does; k6 runs JavaScript per
# iteration. Measured here on GET /healthz, 64 connections: wrk ~12 us of CPU
# per request, k6 ~80 us, the server ~22 us (and ~60 us for enter), so k6
# would mostly measure itself. k6 is used for behaviour under load
# (loadtest/*.js, scripts/loadtest.sh), where its checks and thresholds matter.
#
# Pinning (lib.sh, on by default with 2+ CPUs): wrk on CPU 0, server+redis on
# CPU 1 (so the server runs with GOMAXPROCS=1). On this 2-core shared machine,
# two runs of 3x5s each way: req/s varied between repeats by 1-10% (coefficient
# of variation) pinned against 4-24% unpinned, and enter p99 spanned 9.9-15.7 ms
# pinned against 9.1-69 ms unpinned; unpinned, enter/status peaked ~20%
# higher, as server and Redis then spill onto the wrk core. Steadier figures
# win for side-by-side comparisons; WR_PIN=0 turns pinning off.
# WR_REDIS_CPUS=0 puts Redis on wrk's core instead, leaving the server a core
# of its own, as when Redis runs on its own host (docs/PERFORMANCE.md).
#
# Env: THREADS (2), CONNS (64), DURATION (10s), REPEAT (3), WARMUP (5s; an
# enter+status run before the measured ones, which also fills the line),
# QUEUE (default), LOG_LEVEL (warn: no per-request access log, which would
# write ~200 bytes per request; LOG_LEVEL=info measures with it), RESULTS_DIR
# (keep raw wrk output and results.tsv there), plus WAITROOM_BIN, WR_PIN,
# WR_SERVER_CPUS, WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP (lib.sh).
# Exits 1 if any measured run saw a non-2xx response or a socket error.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
DURATION=${DURATION:-10s}
REPEAT=${REPEAT:-3}
WARMUP=${WARMUP:-5s}
QUEUE=${QUEUE:-default}
LOG_LEVEL=${LOG_LEVEL:-warn}
LUA=$WR_ROOT/loadtest/wrk

command -v wrk >/dev/null || "$WR_ROOT/scripts/install-tools.sh" bench >&2
command -v redis-cli >/dev/null || wr_die "redis-cli not found"

wr_init
wr_build
wr_start_redis
# enter.lua and status.lua name users by plain ids, which the server refuses
# (400 user_ids_disabled) unless WAITROOM_INSECURE_USER_IDS=true: anyone who
# knows an id owns its place, fine for a benchmark, never for production.
# The credential flow has its own scripts (enter-place.lua,
# status-place.lua; MODE_B=place in bench-pair.sh).
wr_start_server WAITROOM_ADMIN_TOKEN="$(wr_token)" WAITROOM_QUEUES="$QUEUE" \
	WAITROOM_REFILL_INTERVAL=1h WAITROOM_REFILL_SIZE=1 WAITROOM_LOG_LEVEL="$LOG_LEVEL" \
	WAITROOM_INSECURE_USER_IDS=true

CLK_TCK=$(getconf CLK_TCK)
OUT=${RESULTS_DIR:-$WR_TMP/results}
mkdir -p "$OUT"
TSV=$OUT/results.tsv
printf 'scenario\trep\trps\tp50_us\tp99_us\tserver_us\tredis_us\tscript_us\tscripts_per_req\terrors\tline\n' >"$TSV"
STATUS_PREFIX=""
STATUS_IDS=0

# line_length prints how many users wait in the queue.
line_length() {
	curl -fsS --max-time 2 "$WR_BASE_URL/api/v1/queues/$QUEUE" | sed -n 's/.*"waiting":\([0-9]*\).*/\1/p'
}

# run_wrk SCENARIO REP [DURATION]: one wrk run plus its CPU and Redis figures,
# appended to $TSV (REP "w" = warm-up, not appended).
run_wrk() {
	local name=$1 rep=$2 dur=${3:-$DURATION}
	local -a envs=()
	case $name in
	healthz) ;;
	enter) envs=(QUEUE="$QUEUE" ID_PREFIX="bench-$rep-" WRK_THREADS="$THREADS" WRK_CONNECTIONS="$CONNS") ;;
	status)
		((STATUS_IDS > 0)) || wr_die "status run before any enter run"
		envs=(QUEUE="$QUEUE" ID_PREFIX="$STATUS_PREFIX" IDS="$STATUS_IDS")
		;;
	esac
	local log=$OUT/$name-$rep.txt
	wr_redis CONFIG RESETSTAT >/dev/null
	local s0 r0 s1 r1
	s0=$(wr_cpu_ticks "$WR_SERVER_PID")
	r0=$(wr_cpu_ticks "$WR_REDIS_PID")
	env "${envs[@]}" timeout $(($(wr_seconds "$dur") + 30)) "${WR_PIN_LOAD[@]}" \
		wrk -t"$THREADS" -c"$CONNS" -d"$dur" --latency -s "$LUA/$name.lua" "$WR_BASE_URL" >"$log" 2>&1 ||
		{ cat "$log" >&2; wr_die "wrk $name failed"; }
	s1=$(wr_cpu_ticks "$WR_SERVER_PID")
	r1=$(wr_cpu_ticks "$WR_REDIS_PID")
	local stats
	stats=$(wr_redis INFO commandstats | tr -d '\r')
	echo "$stats" >"$OUT/$name-$rep.commandstats"

	local res
	res=$(grep '^WRK_RESULT ' "$log") || { cat "$log" >&2; wr_die "no WRK_RESULT from wrk $name"; }
	field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$res"; }
	local requests rps p50 p99 non2xx sockerr
	requests=$(field requests)
	rps=$(field rps)
	p50=$(field p50_us)
	p99=$(field p99_us)
	non2xx=$(field non2xx)
	sockerr=$(field socket_errors)
	if [[ $name == enter && -z $STATUS_PREFIX ]]; then
		STATUS_PREFIX=bench-$rep-
		STATUS_IDS=$(wr_enter_ids "$log")
		wr_log "status runs will ask for ${STATUS_PREFIX}n, n < $STATUS_IDS"
	fi
	local line="-"
	[[ $name == healthz ]] || line=$(line_length)
	local row
	row=$(STATS=$stats awk -v req="$requests" -v ds="$((s1 - s0))" -v dr="$((r1 - r0))" -v clk="$CLK_TCK" \
		-v name="$name" -v rep="$rep" -v rps="$rps" -v p50="$p50" -v p99="$p99" \
		-v err="$((non2xx + sockerr))" -v line="$line" 'BEGIN {
		n = split(ENVIRON["STATS"], l, "\n"); calls = 0; usec = 0; ev = "-"
		for (i = 1; i <= n; i++) {
			if (l[i] !~ /^cmdstat_(evalsha|fcall):/) continue
			if (match(l[i], /[^_]calls=[0-9]+/)) calls += substr(l[i], RSTART + 7, RLENGTH - 7) + 0
			if (match(l[i], /[^_]usec=[0-9]+/)) usec += substr(l[i], RSTART + 6, RLENGTH - 6) + 0
		}
		if (calls > 0) ev = sprintf("%.2f", usec / calls)
		if (calls / req < 0.5) ev = "-"   # only background scripts ran
		printf "%s\t%s\t%.0f\t%d\t%d\t%.1f\t%.1f\t%s\t%.2f\t%d\t%s\n", name, rep, rps, p50, p99,
			ds * 1e6 / clk / req, dr * 1e6 / clk / req, ev, calls / req, err, line
	}')
	wr_log "$(tr '\t' ' ' <<<"$row")"
	[[ $rep == w ]] || echo "$row" >>"$TSV"
}

wr_log "wrk -t$THREADS -c$CONNS -d$DURATION, $REPEAT repeats; CLK_TCK=$CLK_TCK"
if [[ $(wr_seconds "$WARMUP") -gt 0 ]]; then
	wr_log "warm-up ($WARMUP each, not counted)"
	run_wrk healthz w "$WARMUP"
	run_wrk enter w "$WARMUP"
	run_wrk status w "$WARMUP"
fi
for rep in $(seq "$REPEAT"); do
	run_wrk healthz "$rep"
	run_wrk enter "$rep"
	run_wrk status "$rep"
done

echo
echo "waitroom bench: wrk -t$THREADS -c$CONNS -d$DURATION, medians of $REPEAT interleaved runs; pinning: $WR_PINNING; log level $LOG_LEVEL"
echo "line: users waiting at the end of the run (status asks for each of the first enter run's in turn)"
awk -F'\t' '
function median(s, k,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	if (a[1] == "-") return "-"
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR == 1 { next }
{
	if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 }
	for (c = 3; c <= 11; c++) v[$1, c] = v[$1, c] " " $c
	errs[$1] += $10
}
END {
	printf "%-9s %9s %8s %8s %12s %12s %11s %10s %7s %9s\n", "scenario", "req/s", "p50 ms", "p99 ms", "server us/r", "redis us/r", "script us", "scripts/r", "errors", "line"
	for (i = 1; i <= ns; i++) {
		s = order[i]
		for (c = 3; c <= 11; c++) m[s, c] = median(substr(v[s, c], 2))
		printf "%-9s %9.0f %8.2f %8.2f %12.1f %12.1f %11s %10.2f %7d %9s\n", s, m[s, 3], m[s, 4] / 1000, m[s, 5] / 1000, m[s, 6], m[s, 7], m[s, 8], m[s, 9], errs[s], m[s, 11]
	}
	print ""
	for (i = 1; i <= ns; i++) {
		s = order[i]
		if (s == "healthz") continue
		printf "%s/healthz: req/s x%.2f  p50 x%.1f  p99 x%.1f  server CPU/req x%.1f\n", s,
			m[s, 3] / m["healthz", 3], m[s, 4] / m["healthz", 4], m[s, 5] / m["healthz", 5], m[s, 6] / m["healthz", 6]
	}
}' "$TSV"

echo
echo "Redis INFO commandstats, last run of each (calls, usec_per_call):"
for name in enter status; do
	grep '^cmdstat_' "$OUT/$name-$REPEAT.commandstats" | grep -Ev '^cmdstat_(config|info)[|:]' |
		sed -E 's/^cmdstat_([^:]+):calls=([0-9]+),usec=[0-9]+,usec_per_call=([0-9.]+).*/\1 \2 \3/' |
		awk -v n="$name" '{ printf "  %-7s %-12s calls=%-9s usec_per_call=%s\n", n, $1, $2, $3 }'
done
[[ -n ${RESULTS_DIR:-} ]] && echo "raw results: $OUT"

if awk -F'\t' 'NR > 1 && $10 > 0 { bad = 1 } END { exit !bad }' "$TSV"; then
	wr_log "some runs saw errors (non-2xx or socket errors): see the errors column"
	exit 1
fi

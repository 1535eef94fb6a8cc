#!/usr/bin/env bash
# bench-pair.sh: A/B of two builds of waitroom, measured at the same time.
#
#   scripts/bench-pair.sh /path/to/waitroom-a /path/to/waitroom-b
#   SCENARIOS="enter status" ROUNDS=5 scripts/bench-pair.sh a b
#
# On this shared machine the speed of one core moves by a third within
# minutes, so two builds benchmarked one after the other differ by more than
# most changes do. Here both servers, each with its own redis-server, share
# one core (WR_SERVER_CPUS, default CPU 1) and two wrk, one per server, load
# them at the same time from the other core (WR_LOAD_CPUS, default CPU 0):
# whatever the machine does hits both alike. The figure to compare is CPU
# per request (server, Redis, and both), from /proc/PID/stat over each run;
# req/s only shows how the core was shared. Two copies of one build differ
# by at most ~1.5 % this way; run each build in both slots (a b, then b a)
# before trusting a small difference.
#
# Each round runs every scenario once; the line grows with the enter runs
# (refill interval 1h, refill size 1, as in bench.sh), and status asks for
# users of the warm-up enter run. It prints a line per build, scenario and
# round, then per scenario the median over rounds of B's total CPU per
# request relative to A's.
#
# Env: SCENARIOS ("healthz enter status"), ROUNDS (3), DURATION (8s),
# CONNS (32 per server), and lib.sh's WR_PIN, WR_SERVER_CPUS, WR_REDIS_CPUS,
# WR_LOAD_CPUS, WR_KEEP.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 2)) || wr_die "usage: $0 BUILD_A BUILD_B"
SCENARIOS=${SCENARIOS:-healthz enter status}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
CONNS=${CONNS:-32}
LUA=$WR_ROOT/loadtest/wrk
command -v wrk >/dev/null || "$WR_ROOT/scripts/install-tools.sh" bench >&2

declare -A BIN=([A]=$1 [B]=$2) URL SPID RPID IDS
for x in A B; do
	[[ -x ${BIN[$x]} ]] || wr_die "${BIN[$x]} is not executable"
done
wr_init
for x in A B; do
	WR_INSTANCE=-$x
	WR_BIN=${BIN[$x]}
	wr_start_redis
	wr_start_server WAITROOM_ADMIN_TOKEN="$(wr_token)" WAITROOM_QUEUES=default \
		WAITROOM_REFILL_INTERVAL=1h WAITROOM_REFILL_SIZE=1 WAITROOM_LOG_LEVEL=warn
	URL[$x]=$WR_BASE_URL
	SPID[$x]=$WR_SERVER_PID
	RPID[$x]=$WR_REDIS_PID
done

TSV=$WR_TMP/results.tsv
CLK_TCK=$(getconf CLK_TCK)

# run SCENARIO ROUND DURATION: both wrk at once; appends a row per build.
run() {
	local name=$1 round=$2 dur=$3 x
	local -A s0 r0 pid
	for x in A B; do
		s0[$x]=$(wr_cpu_ticks "${SPID[$x]}")
		r0[$x]=$(wr_cpu_ticks "${RPID[$x]}")
		local -a envs=(QUEUE=default WRK_THREADS=1 WRK_CONNECTIONS="$CONNS")
		case $name in
		enter) envs+=(ID_PREFIX="pair-$round-") ;;
		status) envs+=(ID_PREFIX=pair-w- IDS="${IDS[$x]}") ;;
		esac
		env "${envs[@]}" "${WR_PIN_LOAD[@]}" wrk -t1 -c"$CONNS" -d"$dur" --latency \
			-s "$LUA/$name.lua" "${URL[$x]}" >"$WR_TMP/wrk-$x.txt" 2>&1 &
		pid[$x]=$!
	done
	for x in A B; do
		wait "${pid[$x]}" || { cat "$WR_TMP/wrk-$x.txt" >&2; wr_die "wrk $name ($x) failed"; }
	done
	for x in A B; do
		local res s1 r1
		s1=$(wr_cpu_ticks "${SPID[$x]}")
		r1=$(wr_cpu_ticks "${RPID[$x]}")
		res=$(grep '^WRK_RESULT ' "$WR_TMP/wrk-$x.txt") || wr_die "no WRK_RESULT from wrk $name ($x)"
		if [[ $name == enter && $round == w ]]; then
			IDS[$x]=$(wr_enter_ids "$WR_TMP/wrk-$x.txt")
		fi
		[[ $round == w ]] && continue
		awk -v x="$x" -v name="$name" -v round="$round" -v res="$res" -v clk="$CLK_TCK" \
			-v ds="$((s1 - s0[$x]))" -v dr="$((r1 - r0[$x]))" 'BEGIN {
			n = split(res, kv, " ")
			for (i = 2; i <= n; i++) { split(kv[i], p, "="); f[p[1]] = p[2] }
			if (f["non2xx"] + f["socket_errors"] > 0) { print "errors in " name " " x > "/dev/stderr"; exit 1 }
			us = 1e6 / clk / f["requests"]
			printf "%s\t%s\t%s\t%.0f\t%.2f\t%.1f\t%.1f\t%.1f\n", round, name, x, f["rps"], f["p99_us"] / 1000,
				ds * us, dr * us, (ds + dr) * us
		}' | tee -a "$TSV" | awk -F'\t' '{ printf "round %s %-8s %s  %7d req/s  p99 %6.2f ms  server %5.1f us  redis %5.1f us  total %5.1f us\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
	done
}

wr_log "A: ${BIN[A]}"
wr_log "B: ${BIN[B]}"
wr_log "warm-up: enter, 3s (its users are the ones status asks for)"
run enter w 3s
for round in $(seq "$ROUNDS"); do
	for name in $SCENARIOS; do
		run "$name" "$round" "$DURATION"
	done
done

echo
echo "B against A, total (server + Redis) CPU per request, median of $ROUNDS rounds; pinning: $WR_PINNING"
awk -F'\t' '
{ tot[$1, $2, $3] = $8; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } rounds[$1] = 1 }
END {
	for (i = 1; i <= n; i++) {
		s = order[i]; k = 0
		for (r in rounds) if ((r, s, "A") in tot) v[++k] = tot[r, s, "B"] / tot[r, s, "A"]
		for (a = 2; a <= k; a++) for (b = a; b > 1 && v[b-1] > v[b]; b--) { t = v[b]; v[b] = v[b-1]; v[b-1] = t }
		m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
		printf "  %-8s B/A %.3f  (%+.1f %%)\n", s, m, (m - 1) * 100
	}
}' "$TSV"

#!/usr/bin/env bash
# bench-pair.sh: A/B of two builds of waitroom, or of one build in two modes,
# measured at the same time.
#
#   scripts/bench-pair.sh /path/to/waitroom-a /path/to/waitroom-b
#   SCENARIOS="enter status" ROUNDS=5 scripts/bench-pair.sh a b
#   MODE_A=plain MODE_B=place scripts/bench-pair.sh /tmp/wr /tmp/wr
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
# Modes (MODE_A, MODE_B; default plain for both) say how a slot's wrk names
# places in line:
#   plain  plain user ids: enter.lua posts {"user_id":"pair-<round>-<n>"},
#          status.lua asks ?user_id=. The server runs with
#          WAITROOM_INSECURE_USER_IDS=true, since plain ids are refused
#          without it (400 user_ids_disabled); builds before the place
#          credential (44eb1f1 and older) accept them anyway and ignore the
#          variable.
#   place  place credentials, as apps use the service: enter-place.lua posts
#          {} (the server picks the member and signs a place_token),
#          status-place.lua asks with "Authorization: Bearer <place_token>".
#          The server runs as in production, without
#          WAITROOM_INSECURE_USER_IDS.
# So MODE_A=plain MODE_B=place with one binary in both slots measures what
# the credential costs per request; swap the modes for the other order.
#
# ENV_A, ENV_B: extra server env for a slot, NAME=VALUE words separated by
# spaces (no spaces in a value), after the mode's; e.g. to measure what the
# rate limits cost, one build in both slots:
#   ENV_B="WAITROOM_LIMIT_ENTER_PER_CLIENT=0 WAITROOM_LIMIT_ENTER_PER_PLACE=0
#     WAITROOM_LIMIT_STATUS_PER_CLIENT=0 WAITROOM_LIMIT_STATUS_PER_PLACE=0"
#
# Every request comes from its own client address (enter) or its user's
# (status), in X-Forwarded-For, which the servers believe from loopback
# (lib.sh): the server limits enter and status per client address, and
# status per place (loadtest/wrk/clients.lua, status.lua).
#
# The price of a place (WAITROOM_POW_NETWORK_BITS, on by default) asks a
# network's second place for proof of work, which wrk does not solve, so
# lib.sh starts servers with it off. To measure the secure default with
# it on, give every enter a network of its own: WR_CLIENTS=v6 (clients.lua)
# and ENV_B="WAITROOM_POW_NETWORK_BITS=13" (or WR_POW_NETWORK_BITS=13 for
# both slots). Networks that share a bit in the price's bitmap of networks
# seen (price.go: about 1 % of first places here) are asked for proof of
# work all the same: WR_ALLOW_NON2XX=0.02 lets up to that fraction of
# answers be refusals (counted, said); any other refusal stops the run.
#
# Each round runs every scenario once; the line grows with the enter runs
# (refill interval 1h, refill size 1, as in bench.sh), and status asks for
# users of the warm-up enter run (plain: its ids; place: the place tokens it
# received, saved to a file). It prints a line per slot, scenario and round,
# then per scenario the median over rounds of B's CPU per request relative to
# A's, total (server + Redis) and server alone, with each round's ratio.
#
# A build named "bare" is scripts/bare, built here: a plain net/http
# server answering GET /healthz as waitroom's handler does, without the
# router, middleware and connection cap, configured as cmd/waitroom
# configures net/http. Beside waitroom it measures what waitroom's chain
# costs over that floor; it serves healthz only:
#   SCENARIOS=healthz MODE_B=place scripts/bench-pair.sh bare /tmp/wr
#
# Env: SCENARIOS ("healthz enter status"), ROUNDS (3), DURATION (8s),
# CONNS (32 per server), MODE_A / MODE_B (plain), ENV_A / ENV_B (none),
# and lib.sh's WR_PIN,
# WR_SERVER_CPUS, WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 2)) || wr_die "usage: [MODE_A=plain|place] [MODE_B=plain|place] $0 BUILD_A BUILD_B"
SCENARIOS=${SCENARIOS:-healthz enter status}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
CONNS=${CONNS:-32}
LUA=$WR_ROOT/loadtest/wrk
for name in $SCENARIOS; do
	[[ $name =~ ^(healthz|enter|status)$ ]] || wr_die "unknown scenario $name (want healthz, enter, status)"
done
command -v wrk >/dev/null || "$WR_ROOT/scripts/install-tools.sh" bench >&2

declare -A BIN=([A]=$1 [B]=$2) MODE=([A]=${MODE_A:-plain} [B]=${MODE_B:-plain}) XENV=([A]=${ENV_A:-} [B]=${ENV_B:-})
declare -A URL SPID RPID IDS
for x in A B; do
	if [[ ${BIN[$x]} == bare ]]; then
		[[ $SCENARIOS == healthz ]] || wr_die "the bare server serves healthz only: SCENARIOS=healthz"
		continue
	fi
	[[ -x ${BIN[$x]} ]] || wr_die "${BIN[$x]} is not executable"
	[[ ${MODE[$x]} == plain || ${MODE[$x]} == place ]] || wr_die "MODE_$x=${MODE[$x]}: want plain or place"
	for kv in ${XENV[$x]}; do
		[[ $kv =~ ^[A-Z_][A-Z0-9_]*= ]] || wr_die "ENV_$x: \"$kv\" is not NAME=VALUE"
	done
done
wr_init
for x in A B; do
	if [[ ${BIN[$x]} == bare ]]; then
		wr_log "building scripts/bare"
		(cd "$WR_ROOT" && go build -o "$WR_TMP/bare" ./scripts/bare) || wr_die "go build failed"
		BIN[$x]=$WR_TMP/bare MODE[$x]=bare
	fi
done
for x in A B; do
	WR_INSTANCE=-$x
	WR_BIN=${BIN[$x]}
	wr_start_redis
	mode_env=()
	# Plain ids name places without proof, which the server refuses unless
	# told this is a load test (see the modes above).
	[[ ${MODE[$x]} == plain ]] && mode_env=(WAITROOM_INSECURE_USER_IDS=true)
	read -ra extra_env <<<"${XENV[$x]}"
	wr_start_server WAITROOM_ADMIN_TOKEN="$(wr_token)" WAITROOM_QUEUES=default \
		WAITROOM_REFILL_INTERVAL=1h WAITROOM_REFILL_SIZE=1 WAITROOM_LOG_LEVEL=warn "${mode_env[@]}" "${extra_env[@]}"
	URL[$x]=$WR_BASE_URL
	SPID[$x]=$WR_SERVER_PID
	RPID[$x]=$WR_REDIS_PID
done

TSV=$WR_TMP/results.tsv
CLK_TCK=$(getconf CLK_TCK)

# wrk_args X SCENARIO ROUND: prints, one per line, the env and the script
# that slot X's mode uses for SCENARIO in ROUND (w = the warm-up).
wrk_args() {
	local x=$1 name=$2 round=$3 tokens=$WR_TMP/tokens-$1.txt
	echo QUEUE=default
	case ${MODE[$x]}/$name in
	*/healthz) echo "$LUA/healthz.lua" ;;
	plain/enter) printf '%s\n' WRK_THREADS=1 WRK_CONNECTIONS="$CONNS" ID_PREFIX="pair-$round-" "$LUA/enter.lua" ;;
	plain/status) printf '%s\n' ID_PREFIX=pair-w- IDS="${IDS[$x]}" "$LUA/status.lua" ;;
	place/enter)
		# Only the warm-up keeps its tokens: response() makes wrk read
		# every body, which measured runs should not pay.
		[[ $round == w ]] && echo TOKENS_OUT="$tokens"
		echo "$LUA/enter-place.lua"
		;;
	place/status) printf '%s\n' TOKENS="$tokens" "$LUA/status-place.lua" ;;
	esac
}

# run SCENARIO ROUND DURATION: both wrk at once; appends a row per slot.
run() {
	local name=$1 round=$2 dur=$3 x
	local -A s0 r0 pid
	for x in A B; do
		local -a args
		mapfile -t args < <(wrk_args "$x" "$name" "$round")
		s0[$x]=$(wr_cpu_ticks "${SPID[$x]}")
		r0[$x]=$(wr_cpu_ticks "${RPID[$x]}")
		env "${args[@]:0:${#args[@]}-1}" "${WR_PIN_LOAD[@]}" wrk -t1 -c"$CONNS" -d"$dur" --latency \
			-s "${args[-1]}" "${URL[$x]}" >"$WR_TMP/wrk-$x.txt" 2>&1 &
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
			case ${MODE[$x]} in
			plain) IDS[$x]=$(wr_enter_ids "$WR_TMP/wrk-$x.txt") ;;
			place) grep '^PLACE_TOKENS .*count=[1-9]' "$WR_TMP/wrk-$x.txt" >/dev/null ||
				{ cat "$WR_TMP/wrk-$x.txt" >&2; wr_die "the warm-up saved no place tokens ($x): does ${BIN[$x]} issue place credentials?"; } ;;
			esac
		fi
		[[ $round == w ]] && continue
		awk -v allow="${WR_ALLOW_NON2XX:-0}" -v x="$x" -v mode="${MODE[$x]}" -v name="$name" -v round="$round" -v res="$res" -v clk="$CLK_TCK" \
			-v ds="$((s1 - s0[$x]))" -v dr="$((r1 - r0[$x]))" 'BEGIN {
			n = split(res, kv, " ")
			for (i = 2; i <= n; i++) { split(kv[i], p, "="); f[p[1]] = p[2] }
			if (f["socket_errors"] > 0 || f["non2xx"] > allow * f["requests"]) { printf "errors in %s %s: %d non-2xx (429: over a rate limit?), %d socket errors\n", name, x, f["non2xx"], f["socket_errors"] > "/dev/stderr"; exit 1 }
			if (f["non2xx"] > 0) printf "%s %s: %d of %d answers not 2xx (within WR_ALLOW_NON2XX)\n", name, x, f["non2xx"], f["requests"] > "/dev/stderr"
			us = 1e6 / clk / f["requests"]
			printf "%s\t%s\t%s\t%.0f\t%.2f\t%.1f\t%.1f\t%.1f\t%s\n", round, name, x, f["rps"], f["p99_us"] / 1000,
				ds * us, dr * us, (ds + dr) * us, mode
		}' | tee -a "$TSV" | awk -F'\t' '{ printf "round %s %-8s %s %-5s %7d req/s  p99 %6.2f ms  server %5.1f us  redis %5.1f us  total %5.1f us\n", $1, $2, $3, $9, $4, $5, $6, $7, $8 }'
	done
}

wr_log "A: ${BIN[A]} (${MODE[A]}${XENV[A]:+, ${XENV[A]}})"
wr_log "B: ${BIN[B]} (${MODE[B]}${XENV[B]:+, ${XENV[B]}})"
if [[ ${MODE[A]} == bare || ${MODE[B]} == bare ]]; then
	wr_log "warm-up: healthz, 3s"
	run healthz w 3s
else
	wr_log "warm-up: enter, 3s (its users are the ones status asks for)"
	run enter w 3s
fi
for round in $(seq "$ROUNDS"); do
	for name in $SCENARIOS; do
		run "$name" "$round" "$DURATION"
	done
done

echo
echo "B (${BIN[B]}, ${MODE[B]}${XENV[B]:+, ${XENV[B]}}) against A (${BIN[A]}, ${MODE[A]}${XENV[A]:+, ${XENV[A]}}), CPU per request,"
echo "median of $ROUNDS rounds (each round's ratio in brackets); pinning: $WR_PINNING"
awk -F'\t' '
function ratios(col, s,   r, k, a, b, t, m, list) {
	k = 0; list = ""
	for (r = 1; r <= nr; r++) if ((r, s, "A") in cpu) {
		v[++k] = cpu[r, s, "B", col] / cpu[r, s, "A", col]
		list = list sprintf(" %.3f", v[k])
	}
	for (a = 2; a <= k; a++) for (b = a; b > 1 && v[b-1] > v[b]; b--) { t = v[b]; v[b] = v[b-1]; v[b-1] = t }
	m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
	return sprintf("%.3f (%+5.1f %%) [%s ]", m, (m - 1) * 100, list)
}
{
	cpu[$1, $2, $3] = 1; cpu[$1, $2, $3, 6] = $6; cpu[$1, $2, $3, 8] = $8
	if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
	if ($1 + 0 > nr) nr = $1 + 0
}
END {
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "  %-8s total B/A %s   server B/A %s\n", s, ratios(8, s), ratios(6, s)
	}
}' "$TSV"

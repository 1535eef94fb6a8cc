#!/usr/bin/env bash
# loadtest.sh: run the k6 scenarios in loadtest/ against a fresh private
# redis-server and waitroom server (same start-up as bench.sh, see lib.sh),
# each run bounded in time. Exits non-zero if any k6 threshold fails.
#
#   scripts/loadtest.sh                                  # spike, then crowd
#   SCENARIOS=crowd CROWD_USERS=500 scripts/loadtest.sh
#
# The server runs with two queues, "spike" and "crowd", so the spike's line
# does not delay the crowd, and a short tick for the crowd's admission checks:
# WAITROOM_REFILL_INTERVAL=$REFILL_INTERVAL (1s), WAITROOM_REFILL_SIZE=$REFILL_SIZE,
# and with WAITROOM_INSECURE_USER_IDS=true, as the k6 users are plain ids.
# Its rate limits are the defaults: each k6 user calls from an address of
# its own (X-Forwarded-For, believed from loopback: lib.sh; loadtest/lib.js).
#
# The crowd's operator raises the refill size from REFILL_SIZE to NEW_SIZE
# while the line drains, and checks that every tick admits what the size in
# force and the line allow (loadtest/operator.js). To show that, the line
# must outlast a few ticks at both sizes: a crowd of at least
# NEW_SIZE + 9 * REFILL_SIZE. Left unset, the sizes scale with the crowd:
# REFILL_SIZE = CROWD_USERS / 40 (at least 1, at most 50) and NEW_SIZE = 4 *
# REFILL_SIZE, so the line lasts about 40 ticks at the old size whatever the
# crowd (50 and 200 for 2000 users or more; 12 and 48 for 500). Sizes set by
# hand that the crowd cannot show are refused before anything starts.
#
# Env: SCENARIOS ("spike crowd"), SPIKE_RATE (500), SPIKE_DURATION (60s),
# SPIKE_P99_MS (5), CROWD_USERS (2000), CROWD_MAX_DURATION (3m), NEW_SIZE
# (the operator's raise, see above), REFILL_INTERVAL (1s), REFILL_SIZE (see
# above; 50 without the crowd),
# LOG_LEVEL (info: the server log, one line per request, is kept on failure),
# K6 (k6 binary; default: installed by scripts/install-tools.sh bench),
# RESULTS_DIR (k6 summaries as JSON), and lib.sh's WAITROOM_BIN, WR_PIN, ...
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCENARIOS=${SCENARIOS:-spike crowd}
SPIKE_RATE=${SPIKE_RATE:-500}
SPIKE_DURATION=${SPIKE_DURATION:-60s}
SPIKE_P99_MS=${SPIKE_P99_MS:-5}
CROWD_USERS=${CROWD_USERS:-2000}
CROWD_MAX_DURATION=${CROWD_MAX_DURATION:-3m}
REFILL_INTERVAL=${REFILL_INTERVAL:-1s}
[[ $CROWD_USERS =~ ^[1-9][0-9]*$ ]] || wr_die "CROWD_USERS=$CROWD_USERS: want a positive integer"
if [[ " $SCENARIOS " == *" crowd "* ]]; then
	# The crowd's sizes: see the header. Only what was left unset is derived.
	scaled=$((CROWD_USERS / 40))
	scaled=$((scaled < 1 ? 1 : scaled > 50 ? 50 : scaled))
	REFILL_SIZE=${REFILL_SIZE:-$scaled}
	NEW_SIZE=${NEW_SIZE:-$((4 * REFILL_SIZE))}
	[[ $REFILL_SIZE =~ ^[1-9][0-9]*$ && $NEW_SIZE =~ ^[1-9][0-9]*$ ]] ||
		wr_die "REFILL_SIZE=$REFILL_SIZE, NEW_SIZE=$NEW_SIZE: want positive integers"
	((NEW_SIZE > REFILL_SIZE)) ||
		wr_die "NEW_SIZE=$NEW_SIZE must be larger than REFILL_SIZE=$REFILL_SIZE: the crowd's operator raises the size"
	min_crowd=$((NEW_SIZE + 9 * REFILL_SIZE))
	((CROWD_USERS >= min_crowd)) ||
		wr_die "CROWD_USERS=$CROWD_USERS is too small to show a raise from $REFILL_SIZE to $NEW_SIZE: the operator's check needs at least $min_crowd users (NEW_SIZE + 9 * REFILL_SIZE); leave REFILL_SIZE and NEW_SIZE unset to scale them with the crowd"
	wr_log "crowd: $CROWD_USERS users, refill $REFILL_SIZE per $REFILL_INTERVAL, raised to $NEW_SIZE by the operator"
fi
REFILL_SIZE=${REFILL_SIZE:-50}
NEW_SIZE=${NEW_SIZE:-200}
LOG_LEVEL=${LOG_LEVEL:-info}
if [[ -z ${K6:-} ]]; then
	"$WR_ROOT/scripts/install-tools.sh" bench >&2 # k6 (built with go install) and wrk
	K6=$(command -v k6 || echo "$(go env GOPATH)/bin/k6")
fi
[[ -x $K6 ]] || wr_die "k6 not found at $K6"

wr_init
wr_build
wr_start_redis
TOKEN=$(wr_token)
# The k6 users are plain ids (loadtest/lib.js: RUN_ID-<n>), which the server
# refuses (400 user_ids_disabled) unless WAITROOM_INSECURE_USER_IDS=true:
# anyone who knows an id owns its place, fine for a load test, never for
# production.
wr_start_server WAITROOM_ADMIN_TOKEN="$TOKEN" WAITROOM_QUEUES=spike,crowd \
	WAITROOM_REFILL_INTERVAL="$REFILL_INTERVAL" WAITROOM_REFILL_SIZE="$REFILL_SIZE" \
	WAITROOM_LOG_LEVEL="$LOG_LEVEL" WAITROOM_INSECURE_USER_IDS=true
OUT=${RESULTS_DIR:-$WR_TMP/results}
mkdir -p "$OUT"

# run_k6 NAME BOUND_SECONDS SCRIPT -e ...: one bounded k6 run; its exit code
# is recorded, not fatal, so every scenario runs.
FAILED=()
run_k6() {
	local name=$1 bound=$2 script=$3
	shift 3
	wr_log "k6 $name (bounded to ${bound}s)"
	local rc=0
	timeout --kill-after=10 "$bound" "${WR_PIN_LOAD[@]}" "$K6" run --quiet --no-usage-report \
		--summary-export "$OUT/$name-summary.json" \
		-e BASE_URL="$WR_BASE_URL" -e ADMIN_TOKEN="$TOKEN" -e RUN_ID="lt$$-$name" "$@" \
		"$WR_ROOT/loadtest/$script" || rc=$?
	case $rc in
	0) wr_log "k6 $name: thresholds passed" ;;
	99) wr_log "k6 $name: thresholds FAILED"; FAILED+=("$name") ;;
	124 | 137) wr_log "k6 $name: timed out"; FAILED+=("$name") ;;
	*) wr_log "k6 $name: exit code $rc"; FAILED+=("$name") ;;
	esac
}

for s in $SCENARIOS; do
	case $s in
	spike)
		run_k6 spike $(($(wr_seconds "$SPIKE_DURATION") + 60)) spike.js \
			-e QUEUE=spike -e RATE="$SPIKE_RATE" -e DURATION="$SPIKE_DURATION" -e P99_MS="$SPIKE_P99_MS"
		;;
	crowd)
		run_k6 crowd $(($(wr_seconds "$CROWD_MAX_DURATION") + 60)) crowd.js \
			-e QUEUE=crowd -e USERS="$CROWD_USERS" -e MAX_DURATION="$CROWD_MAX_DURATION" \
			-e OLD_SIZE="$REFILL_SIZE" -e NEW_SIZE="$NEW_SIZE"
		;;
	*) wr_die "unknown scenario $s (want spike, crowd)" ;;
	esac
done

if ((${#FAILED[@]} > 0)); then
	wr_log "failed: ${FAILED[*]} (server log: $WR_TMP/server.log)"
	exit 1
fi
wr_log "all scenarios passed"

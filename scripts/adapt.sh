#!/usr/bin/env bash
# adapt.sh: the order page's health drives the rate, measured.
# A private redis-server, lab/cmd/wr-orders (an order page serving CAPACITY
# orders at once, ORDER_TIME each: CAPACITY / ORDER_TIME orders a second,
# more wait, so latency grows past it) behind waitroom's reverse-proxy
# gate, and lab/cmd/wr-adapt keeping the line full of users who poll as told
# and order once admitted. Two bounded runs, each on a fresh Redis and
# server: a fixed refill of twice the page's capacity, then the
# controller on (adapt_enabled, origin_target_p95_ms TARGET, floor FLOOR,
# refill_size still twice the capacity: the ceiling). Each writes a CSV
# (one row a second); then docs/adapt.png plots both, and the figures
# (settling time, p95 after it against 1.5x target, admitted per minute
# against the page's capacity) are printed.
#
#   scripts/adapt.sh
#   DURATION=120s CAPACITY=8 ORDER_TIME=400ms scripts/adapt.sh
#
# Env: DURATION (180s per run), CAPACITY (10), ORDER_TIME (1s), TARGET
# (2s), FLOOR (2), INTERVAL (1s), OUT (docs/adapt.png), RESULTS_DIR
# (keep the CSVs there), RUNS ("fixed adapt"; "adapt" alone runs only the
# controller, prints its figures and leaves the PNG alone: half the time
# when tuning it), plus WR_PIN and the rest of lib.sh's knobs.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=${DURATION:-180s}
CAPACITY=${CAPACITY:-10}
ORDER_TIME=${ORDER_TIME:-1000ms}
TARGET=${TARGET:-2s}
FLOOR=${FLOOR:-2}
INTERVAL=${INTERVAL:-1s}
OUT=${OUT:-$WR_ROOT/docs/adapt.png}
RUNS=${RUNS:-fixed adapt}

wr_init
wr_build
(cd "$WR_ROOT/lab" && go build -o "$WR_TMP/wr-orders" ./cmd/wr-orders && go build -o "$WR_TMP/wr-adapt" ./cmd/wr-adapt) ||
	wr_die "go build failed"

# Orders a second the page serves, and the fixed refill: twice that per interval.
per_second=$(awk -v c="$CAPACITY" -v t="${ORDER_TIME%ms}" 'BEGIN { printf "%.3f", c * 1000 / t }')
refill=$(awk -v r="$per_second" -v i="${INTERVAL%s}" 'BEGIN { printf "%d", 2 * r * i + 0.5 }')
wr_log "page capacity $per_second orders/s; fixed refill $refill per $INTERVAL (twice it)"

orders_port=$(wr_free_port)
WR_ORDERS_ADDR=127.0.0.1:$orders_port WAITROOM_DEMO_CAPACITY=$CAPACITY WAITROOM_DEMO_ORDER_TIME=$ORDER_TIME \
	"${WR_PIN_LOAD[@]}" "$WR_TMP/wr-orders" >"$WR_TMP/orders.log" 2>&1 &
WR_PIDS+=($!)
wr_start_redis
token=$(wr_token)

run() { # run NAME ADAPT
	wr_redis FLUSHALL >/dev/null
	WR_INSTANCE=-$1
	wr_start_server WAITROOM_ADMIN_TOKEN="$token" WAITROOM_INSECURE_USER_IDS=true WAITROOM_COOKIE_SECURE=false \
		WAITROOM_UPSTREAM="http://127.0.0.1:$orders_port" WAITROOM_UPSTREAM_TIMEOUT=10m \
		WAITROOM_REFILL_INTERVAL="$INTERVAL" WAITROOM_REFILL_SIZE="$refill" WAITROOM_LOG_LEVEL=warn
	wr_log "run $1: adapt_enabled=$2 for $DURATION"
	"${WR_PIN_LOAD[@]}" "$WR_TMP/wr-adapt" run -url "$WR_BASE_URL" -token "$token" -refill "$refill" -adapt="$2" \
		-target "$TARGET" -floor "$FLOOR" -duration "$DURATION" -out "$WR_TMP/$1.csv"
	kill "$WR_SERVER_PID"
	wait "$WR_SERVER_PID" 2>/dev/null || true
}
# 1.5x TARGET in ms (TARGET is 2s or 800ms).
case $TARGET in
*ms) target_limit_ms=$(awk -v t="${TARGET%ms}" 'BEGIN { print 1.5 * t }') ;;
*s) target_limit_ms=$(awk -v t="${TARGET%s}" 'BEGIN { print 1.5 * t * 1000 }') ;;
*) wr_die "TARGET: 2s or 800ms, not $TARGET" ;;
esac

# summary NAME: the run's figures over the whole time after settling (the
# plot's own line gives minute-long windows): the first second from which
# the p95 stays within 1.5x target, its max after, and the people admitted
# from then to the end a minute, against what the page serves.
summary() {
	awk -F, -v name="$1" -v limit="$target_limit_ms" -v cap="$per_second" '
		NR > 1 { n++; adm[n] = $2; p95[n] = $5 }
		END {
			s = 1
			for (i = n; i >= 1; i--) if (p95[i] > limit) { s = i + 1; break }
			if (s > n) { printf "%s: p95 over 1.5x target at the end\n", name; exit }
			for (i = s; i <= n; i++) { sum += adm[i]; m = p95[i] > m ? p95[i] : m }
			per = sum * 60 / (n - s + 1)
			printf "%s: settled at %ds (p95 max after %.0f ms); admitted %ds-%ds: %d, %.0f a minute, %.1f %% of %.0f\n",
				name, s, m, s, n, sum, per, 100 * per / (cap * 60), cap * 60
		}' "$WR_TMP/$1.csv"
}

for r in $RUNS; do
	case $r in
	fixed) run fixed false ;;
	adapt) run adapt true ;;
	*) wr_die "RUNS: fixed and/or adapt, not $r" ;;
	esac
	summary "$r"
done
if [[ $RUNS != *fixed* || $RUNS != *adapt* ]]; then
	if [[ -n ${RESULTS_DIR:-} ]]; then
		mkdir -p "$RESULTS_DIR"
		cp "$WR_TMP"/*.csv "$RESULTS_DIR"/
	fi
	exit 0
fi

"$WR_TMP/wr-adapt" plot -fixed "$WR_TMP/fixed.csv" -adapt "$WR_TMP/adapt.csv" -capacity "$per_second" \
	-target "$TARGET" -interval "$INTERVAL" -out "$OUT"
wr_log "wrote $OUT"
if [[ -n ${RESULTS_DIR:-} ]]; then
	mkdir -p "$RESULTS_DIR"
	cp "$WR_TMP"/fixed.csv "$WR_TMP"/adapt.csv "$RESULTS_DIR"/
fi

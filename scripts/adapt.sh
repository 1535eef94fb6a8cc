#!/usr/bin/env bash
# adapt.sh: the order page's health drives the rate (issue 21), measured.
# A private redis-server, cmd/wr-orders (an order page serving CAPACITY
# orders at once, ORDER_TIME each: CAPACITY / ORDER_TIME orders a second,
# more wait, so latency grows past it) behind waitroom's reverse-proxy
# gate, and cmd/wr-adapt keeping the line full of users who poll as told
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
# (keep the CSVs there), plus WR_PIN and the rest of lib.sh's knobs.
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

wr_init
wr_build
(cd "$WR_ROOT" && go build -o "$WR_TMP/wr-orders" ./cmd/wr-orders && go build -o "$WR_TMP/wr-adapt" ./cmd/wr-adapt) ||
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
run fixed false
run adapt true

"$WR_TMP/wr-adapt" plot -fixed "$WR_TMP/fixed.csv" -adapt "$WR_TMP/adapt.csv" -capacity "$per_second" \
	-target "$TARGET" -interval "$INTERVAL" -out "$OUT"
wr_log "wrote $OUT"
if [[ -n ${RESULTS_DIR:-} ]]; then
	mkdir -p "$RESULTS_DIR"
	cp "$WR_TMP"/fixed.csv "$WR_TMP"/adapt.csv "$RESULTS_DIR"/
fi

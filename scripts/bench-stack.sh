#!/usr/bin/env bash
# bench-stack.sh: load test of the compose stack (three replicas, Redis, the
# nginx load balancer) through its load balancer, as clients reach it: wrk
# drives a mix of enter and status with place credentials
# (loadtest/wrk/enter-status.lua: each enter makes a place that then asks
# its status STATUS_PER_ENTER times) for DURATION, and the script prints
# req/s, latency percentiles and errors.
#
#   scripts/bench-stack.sh                  # a stack of its own: up, 30 s of load, down
#   STACK=running scripts/bench-stack.sh    # the stack already up on WAITROOM_PORT
#
# By default it starts a stack of its own with scripts/up.sh, in the compose
# project waitroom-bench on its own subnet (so a stack of yours, project
# waitroom, is left alone; the port must be free), and takes it down (with
# its data) at the end; BENCH_KEEP=1 leaves it up.
#
# The per-client limits. nginx is the edge: it replaces X-Forwarded-For with
# the address the connection came from, and the replicas believe it (they
# trust the compose subnet only). wrk on this host reaches nginx through
# Docker's port forwarding, from the network's gateway: one address for
# every connection. At the shipped per-client limits (5 enters a second,
# burst 300) almost every enter would be answered 429 within a second, and
# the test would measure refusals. So the stack it starts runs with
# loadtest/compose-bench.yml, which raises the per-client limits far above
# what the test reaches; the limiter still runs on every call, and the
# per-place limits are as shipped (each place here is one user's). With
# STACK=running nothing is changed: start that stack with
#   COMPOSE_FILE=docker-compose.yml:loadtest/compose-bench.yml scripts/up.sh
# or the 429s are counted as errors (and the script says why).
#
# Everything runs on this host: the load generator, nginx, three replicas
# and Redis share its cores, so the figure is that of the whole stack on
# this machine, not of a replica. nginx logs every request (as shipped).
#
# Env: STACK (start | running; start), DURATION (30s), CONNECTIONS (64),
# THREADS (1, wrk's), STATUS_PER_ENTER (10, at most 20), QUEUE (default),
# BENCH_KEEP (0), WRK (wrk binary; default: installed by
# scripts/install-tools.sh bench), and up.sh's WAITROOM_PORT (a free port
# for a stack of its own, 8080 with STACK=running),
# WAITROOM_SUBNET (here 172.30.76.0/24), COMPOSE_PROJECT_NAME (here
# waitroom-bench).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STACK=${STACK:-start}
DURATION=${DURATION:-30s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-1}
STATUS_PER_ENTER=${STATUS_PER_ENTER:-10}
QUEUE=${QUEUE:-default}
BENCH_KEEP=${BENCH_KEEP:-0}
# A stack of its own listens on a free port, so one of yours on 8080 can
# stay up; a running stack is where up.sh put it.
if [[ $STACK == start && -z ${WAITROOM_PORT:-} ]]; then
	WAITROOM_PORT=$(wr_free_port)
fi
export WAITROOM_PORT=${WAITROOM_PORT:-8080}
base=http://localhost:$WAITROOM_PORT

if [[ -z ${WRK:-} ]]; then
	WRK=$(command -v wrk || true)
	if [[ -z $WRK ]]; then
		"$WR_ROOT/scripts/install-tools.sh" bench >&2
		WRK=$(command -v wrk)
	fi
fi
[[ -x $WRK ]] || wr_die "wrk not found at $WRK"
seconds=$(wr_seconds "$DURATION")
((seconds >= 1)) || wr_die "DURATION=$DURATION: want at least 1s"

up() { "$WR_ROOT/scripts/up.sh" "$@"; }

work=$(mktemp -d)
started=0
cleanup() {
	local rc=$?
	if ((started)); then
		if [[ $BENCH_KEEP == 1 ]]; then
			wr_log "left the stack up; down: COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME COMPOSE_FILE=$COMPOSE_FILE WAITROOM_PORT=$WAITROOM_PORT scripts/up.sh down -v"
		else
			wr_log "taking the stack down"
			timeout 120 "$WR_ROOT/scripts/up.sh" down -v >/dev/null 2>&1 ||
				wr_log "up.sh down -v failed: run it yourself (COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME)"
		fi
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

case $STACK in
start)
	export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-waitroom-bench}
	export WAITROOM_SUBNET=${WAITROOM_SUBNET:-172.30.76.0/24}
	export COMPOSE_FILE=docker-compose.yml:loadtest/compose-bench.yml
	# No admin call is made: the token up.sh makes stays in the run's
	# temp dir, not in the checkout's .waitroom.
	export WAITROOM_STATE_DIR=$work/state
	if (exec 3<>"/dev/tcp/127.0.0.1/$WAITROOM_PORT") 2>/dev/null; then
		wr_die "something already listens on port $WAITROOM_PORT: set WAITROOM_PORT to a free one, or leave it unset for any free port"
	fi
	wr_log "starting the stack (project $COMPOSE_PROJECT_NAME, port $WAITROOM_PORT, per-client limits raised: loadtest/compose-bench.yml)"
	started=1
	# Bounded: a first build of the service image takes a couple of minutes.
	timeout 600 "$WR_ROOT/scripts/up.sh" 2>&1 | grep -v '^  admin token' >&2 ||
		wr_die "scripts/up.sh failed"
	;;
running)
	curl -fsS -o /dev/null --max-time 2 "$base/readyz" ||
		wr_die "no stack answers on $base/readyz: start one with scripts/up.sh, or leave STACK unset"
	;;
*) wr_die "STACK=$STACK: want start or running" ;;
esac

replicas=$(up ps -q waitroom 2>/dev/null | wc -l)
out=$work/wrk.out
wr_log "wrk: ${DURATION} of enter + ${STATUS_PER_ENTER} status per place, $CONNECTIONS connections, $THREADS thread(s), through $base ($replicas replicas; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
rc=0
QUEUE=$QUEUE STATUS_PER_ENTER=$STATUS_PER_ENTER timeout --kill-after=10 $((seconds + 30)) \
	"$WRK" -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency \
	-s "$WR_ROOT/loadtest/wrk/enter-status.lua" "$base" >"$out" 2>&1 || rc=$?
if ((rc != 0)); then
	cat "$out" >&2
	wr_die "wrk exited with $rc"
fi

result=$(grep '^WRK_RESULT' "$out" || true)
mix=$(grep '^ENTER_STATUS' "$out" || true)
[[ -n $result && -n $mix ]] || wr_die "wrk printed no result"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
requests=$(field requests "$result")
non2xx=$(field non2xx "$result")
socket=$(field socket_errors "$result")
r429=$(field r429 "$mix")
errors=$((non2xx + socket))
ms() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }
pct() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.2f %%", d ? 100 * n / d : 0 }'; }

echo "stack: $replicas replicas behind nginx on $base, $DURATION, $CONNECTIONS connections"
echo "  req/s  $(field rps "$result")   (enter $(field enter "$mix"), status $(field status "$mix") sent)"
echo "  p50    $(ms "$(field p50_us "$result")")   p90 $(ms "$(field p90_us "$result")")   p99 $(ms "$(field p99_us "$result")")"
echo "  errors $errors of $requests ($(pct "$errors" "$requests")): non-2xx $non2xx (429: $r429, 5xx: $(field r5xx "$mix"), other: $(field other "$mix")), socket $socket"
if ((r429 > 0)); then
	wr_log "429s: the replicas see every connection as one client (the load balancer's view of this host)."
	wr_log "Run with STACK unset, or start the stack with COMPOSE_FILE=docker-compose.yml:loadtest/compose-bench.yml scripts/up.sh"
fi

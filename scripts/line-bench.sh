#!/usr/bin/env bash
# line-bench.sh: far-back polls through nginx, the line's cached public
# document against today's status, side by side in one run.
#
#   scripts/line-bench.sh                          # 200,000 places, 20 s a load, 2 rounds
#   PLACES=50000 DURATION=10s ROUNDS=1 scripts/line-bench.sh
#
# One waitroom (the secure default: place credentials, default rate limits,
# metrics on) with its own redis-server, and nginx in front of it with the
# shipped deploy/nginx/waitroom.conf (addresses and cache paths swapped as
# internal/testkit/e2e/nginx_test.go does; one worker, keepalive_requests raised as
# scripts/bench-gate.sh does, so wrk does not reconnect every 1000). PLACES
# places enter through the API (lab/cmd/wr-tenmillion -mode enter, each from
# an address of its own); the credentials of the places from SKIP on (far
# from the head: the exact zone is the first 500) are kept. Then, in each
# round, two loads, each for DURATION, one after the other:
#   status  GET /api/v1/queues/Q/status through nginx, "Authorization: Bearer
#           <place_token>", the credentials taken in turn, each request from
#           its place's own address (X-Forwarded-For; nginx appends its own,
#           which waitroom trusts from loopback, lib.sh): what a far-back page
#           polls today.
#   line    GET /api/v1/queues/Q/line through nginx, from the same spread of
#           addresses: what the page polls instead (web/static/waiting-line.js),
#           cached 1 s by nginx with proxy_cache_lock.
# For each: requests/s, non-2xx/3xx answers, p50/p99, CPU µs per request of
# nginx (master + worker), waitroom, redis-server and the three together
# (/proc/PID/stat utime+stime deltas ÷ requests), and the requests that
# reached the origin each second (waitroom's waitroom_http_requests_total
# for that route, from its metrics port, before and after).
#
# Pinning (lib.sh, on with 2+ CPUs): waitroom, redis-server and nginx on
# WR_SERVER_CPUS (CPU 1), wrk on WR_LOAD_CPUS (CPU 0), one wrk thread.
#
# Env: PLACES (200000), DURATION (20s), ROUNDS (2), CONNS (64 wrk
# connections), SKIP (10000, at most PLACES/2), QUEUE (default), NGINX
# (/usr/sbin/nginx unless on PATH), RESULTS_DIR (keep the report there),
# LOG_LEVEL (warn), and lib.sh's WAITROOM_BIN, WR_PIN, WR_SERVER_CPUS,
# WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP. About 1 min of fill for 200,000
# places plus 2 × ROUNDS × DURATION; every step is bounded by timeout.
#
# scripts/tenmillion.sh sources this file for its nginx and load helpers
# (lb_*), with LB_LIB=1; it then runs nothing itself.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
QUEUE=${QUEUE:-default}
LB_NGINX_PORT=""
LB_NGINX_PID=""
LB_METRICS=""

# lb_start_nginx WAITROOM_ADDR: nginx with the shipped config in front of
# waitroom, pinned with the server; sets LB_NGINX_PORT and LB_NGINX_PID.
lb_start_nginx() {
	local upstream=$1 dir=$WR_TMP/nginx user="" conf old swap
	[[ -x $NGINX ]] || wr_die "nginx not found (NGINX=$NGINX)"
	mkdir -p "$dir/cache"
	LB_NGINX_PORT=$(wr_free_port)
	# Nothing here reaches the order site: an address nothing listens on.
	local order_port
	order_port=$(wr_free_port)
	conf=$(<"$WR_ROOT/deploy/nginx/waitroom.conf")
	for swap in "server waitroom:8080;|server $upstream;" \
		"server demo-order:8081;|server 127.0.0.1:$order_port;" \
		"listen 80;|listen 127.0.0.1:$LB_NGINX_PORT backlog=4096;" \
		"/var/cache/nginx/waitroom_auth|$dir/cache/waitroom_auth" \
		"/var/cache/nginx/waitroom_line|$dir/cache/waitroom_line"; do
		old=${swap%%|*}
		[[ $conf == *"$old"* ]] || wr_die "deploy/nginx/waitroom.conf no longer has \"$old\""
		conf=${conf//"$old"/"${swap#*|}"}
	done
	echo "$conf" >"$dir/site.conf"
	# As root, workers would run as nobody, who cannot enter the temp dir.
	[[ $(id -u) == 0 ]] && user="user root;"
	cat >"$dir/nginx.conf" <<EOF
$user
worker_processes 1;
worker_rlimit_nofile 65536;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    include $dir/site.conf;
}
EOF
	"${WR_PIN_SERVER[@]}" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;' >"$dir/stdout.log" 2>&1 &
	LB_NGINX_PID=$!
	WR_PIDS+=("$LB_NGINX_PID")
	wr_await 100 "$LB_NGINX_PID" "$dir/error.log" "nginx did not start" \
		curl -sS -o /dev/null --max-time 1 "http://127.0.0.1:$LB_NGINX_PORT/api/v1/queues/$QUEUE/line"
	wr_log "nginx pid $LB_NGINX_PID on 127.0.0.1:$LB_NGINX_PORT (deploy/nginx/waitroom.conf)"
}

# lb_cpu_tree PID: CPU ticks of PID and its children (nginx: master + worker).
lb_cpu_tree() {
	local t c
	t=$(wr_cpu_ticks "$1")
	for c in $(pgrep -P "$1" || true); do
		t=$((t + $(wr_cpu_ticks "$c" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# lb_origin ROUTE_SUFFIX: waitroom's requests answered on the route ending
# in ROUTE_SUFFIX (/status, /line), all methods and codes, from its metrics.
lb_origin() {
	curl -fsS --max-time 5 "http://$LB_METRICS/metrics" |
		awk -v r="$1\"" '/^waitroom_http_requests_total\{/ && index($0, r) { s += $NF } END { printf "%d\n", s }'
}

# lb_write_lua TOKENS: the wrk scripts, into $WR_TMP.
lb_write_lua() {
	local tokens=$1
	cat >"$WR_TMP/common.lua" <<'EOF'
-- client_addr as loadtest/wrk/clients.lua and lib.sh's wr_client_addr.
function client_addr(n)
  local lo = (n % 16777216) * 40503 % 16777216
  local hi = 11 + math.floor(n / 16777216) % 100
  return string.format("%d.%d.%d.%d", hi, math.floor(lo / 65536), math.floor(lo / 256) % 256, lo % 256)
end
queue = os.getenv("WR_QUEUE") or "default"
EOF
	# status: the kept credentials in turn, from a random start; place i
	# calls from address SKIP + i (any spread would do: the limits are per
	# address and per place).
	cat >"$WR_TMP/status.lua" <<EOF
dofile("$WR_TMP/common.lua")
local toks = {}
for l in io.lines("$tokens") do toks[#toks + 1] = l end
math.randomseed(os.time())
local i = math.random(#toks)
local path = "/api/v1/queues/" .. queue .. "/status"
request = function()
  i = i % #toks + 1
  return wrk.format("GET", path, {["Authorization"] = "Bearer " .. toks[i], ["X-Forwarded-For"] = client_addr(1000000 + i)})
end
EOF
	cat >"$WR_TMP/line.lua" <<EOF
dofile("$WR_TMP/common.lua")
local n = $(wc -l <"$tokens")
math.randomseed(os.time())
local i = math.random(n)
local path = "/api/v1/queues/" .. queue .. "/line"
request = function()
  i = i % n + 1
  return wrk.format("GET", path, {["X-Forwarded-For"] = client_addr(1000000 + i)})
end
EOF
}

# lb_load NAME ROUTE DURATION CONNS: one wrk run through nginx with
# $WR_TMP/NAME.lua; prints one row (see lb_header).
lb_load() {
	local name=$1 route=$2 dur=$3 conns=$4 out
	out=$WR_TMP/wrk-$name-$RANDOM.txt
	local n0 w0 r0 o0 n1 w1 r1 o1 t0 t1
	n0=$(lb_cpu_tree "$LB_NGINX_PID")
	w0=$(wr_cpu_ticks "$WR_SERVER_PID")
	r0=$(wr_cpu_ticks "$WR_REDIS_PID")
	o0=$(lb_origin "$route")
	t0=$(date +%s.%N)
	WR_QUEUE=$QUEUE timeout $(($(wr_seconds "$dur") + 60)) "${WR_PIN_LOAD[@]}" wrk -t1 -c"$conns" -d"$dur" --latency \
		-s "$WR_TMP/$name.lua" "http://127.0.0.1:$LB_NGINX_PORT" >"$out"
	t1=$(date +%s.%N)
	n1=$(lb_cpu_tree "$LB_NGINX_PID")
	w1=$(wr_cpu_ticks "$WR_SERVER_PID")
	r1=$(wr_cpu_ticks "$WR_REDIS_PID")
	o1=$(lb_origin "$route")
	local reqs non2xx p50 p99 hz
	reqs=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$out")
	non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$out")
	p50=$(awk '$1 == "50%" { print $2 }' "$out")
	p99=$(awk '$1 == "99%" { print $2 }' "$out")
	hz=$(getconf CLK_TCK)
	[[ -n $reqs && $reqs -gt 0 ]] || { cat "$out" >&2; wr_die "wrk ($name) made no requests"; }
	awk -v name="$name" -v reqs="$reqs" -v bad="${non2xx:-0}" -v p50="$p50" -v p99="$p99" -v hz="$hz" \
		-v t0="$t0" -v t1="$t1" -v n="$((n1 - n0))" -v w="$((w1 - w0))" -v r="$((r1 - r0))" -v o="$((o1 - o0))" 'BEGIN {
		s = t1 - t0; u = 1e6 / hz / reqs
		printf "%-8s %10.0f %8d %8s %8s %9.1f %9.1f %9.1f %9.1f %11.1f %8.2f%%\n", name, reqs / s, bad, p50, p99,
			n * u, w * u, r * u, (n + w + r) * u, o / s, 100 * o / reqs
	}'
}

lb_header() {
	printf "%-8s %10s %8s %8s %8s %9s %9s %9s %9s %11s %9s\n" load "req/s" "non-2xx" p50 p99 \
		"nginx µs" "origin µs" "redis µs" "total µs" "origin r/s" "origin %"
}

[[ ${LB_LIB:-0} == 1 ]] && return 0

PLACES=${PLACES:-200000}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-2}
CONNS=${CONNS:-64}
SKIP=${SKIP:-10000}
((SKIP <= PLACES / 2)) || SKIP=$((PLACES / 2))
LOG_LEVEL=${LOG_LEVEL:-warn}
command -v wrk >/dev/null || wr_die "wrk not found (scripts/install-tools.sh bench)"
if (($(ulimit -n) < 65536)); then ulimit -n 65536 2>/dev/null || true; fi

wr_init
wr_build
wr_log "building lab/cmd/wr-tenmillion"
(cd "$WR_ROOT/lab" && go build -o "$WR_TMP/wr-tenmillion" ./cmd/wr-tenmillion) || wr_die "go build failed"
wr_start_redis
LB_METRICS=127.0.0.1:$(wr_free_port)
wr_start_server WAITROOM_QUEUES="$QUEUE" WAITROOM_LOG_LEVEL="$LOG_LEVEL" WAITROOM_METRICS_ADDR="$LB_METRICS"
lb_start_nginx "127.0.0.1:$WR_SERVER_PORT"

OUT=${RESULTS_DIR:-$WR_TMP}
mkdir -p "$OUT"
REPORT=$OUT/line-bench.txt
wr_log "entering $PLACES places through the API"
timeout 900 "${WR_PIN_LOAD[@]}" "$WR_TMP/wr-tenmillion" -mode enter -url "$WR_BASE_URL" -queue "$QUEUE" \
	-places "$PLACES" -skip "$SKIP" -conns 64 -tokens "$WR_TMP/tokens.txt" | tee "$REPORT"
lb_write_lua "$WR_TMP/tokens.txt"
sleep 2 # a fresh snapshot of the whole line on the replica
# Warm both paths (connections, the cache, the snapshot).
lb_load status /status 3s "$CONNS" >/dev/null
lb_load line /line 3s "$CONNS" >/dev/null
{
	echo "line-bench: $PLACES places in line, far-back credentials from place $SKIP on, $CONNS wrk connections, $DURATION a load, $ROUNDS rounds"
	echo "pinning: $WR_PINNING; nginx (one worker) with the server; $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
	echo "µs: CPU per request through nginx (/proc utime+stime); origin r/s: requests on that route that reached waitroom, per second"
	lb_header
} | tee -a "$REPORT"
for round in $(seq "$ROUNDS"); do
	lb_load status /status "$DURATION" "$CONNS" | tee -a "$REPORT"
	lb_load line /line "$DURATION" "$CONNS" | tee -a "$REPORT"
	wr_log "round $round done"
done
echo "line document: $(curl -fsS "http://127.0.0.1:$LB_NGINX_PORT/api/v1/queues/$QUEUE/line" | wc -c) bytes" | tee -a "$REPORT"
errors=$(grep -c 'level=ERROR' "$WR_TMP/server.log" || true)
wr_log "server log: $errors error lines"

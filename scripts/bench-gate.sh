#!/usr/bin/env bash
# bench-gate.sh: what it costs to put waitroom in front of an order page,
# the three ways side by side in one run, against one upstream:
#
#   scripts/bench-gate.sh
#   DURATION=8s REPEAT=5 USERS=0 scripts/bench-gate.sh
#
# The upstream (the order page) is a separate nginx answering a fixed
# 150-byte HTML page (`return 200`) on every path: cheap and steady, and a
# process of its own, so its CPU is counted apart. Scenarios, every one sent
# the same request by wrk (loadtest/wrk/gate.lua: GET with the pass cookie
# wr_pass_default=<pass>, which only the gated ones read):
#
#   direct    the upstream itself
#   nginx     nginx proxy_pass to it, no check: the anchor a site would
#             otherwise deploy (the proxy settings of deploy/nginx)
#   gate      waitroom's reverse-proxy gate (WAITROOM_UPSTREAM), GET /
#   bypass    the same gate on a WAITROOM_GATE_BYPASS path (/static/app.css):
#             the same proxying without the pass check
#   bare      scripts/bare with WAITROOM_UPSTREAM: a bare
#             httputil.ReverseProxy with waitroom's proxy transport, no
#             gate: the floor under gate (target: gate >= 0.9x bare)
#   authreq   nginx auth_request + waitroom's /gate/verify, with the shipped
#             deploy/nginx/waitroom.conf, its addresses (and its cache
#             directory) swapped as internal/testkit/e2e/nginx_test.go does: its
#             verify answers kept 1 s per pass (target: >= 0.8x nginx)
#   authreq-nc  the same config with that cache off (proxy_cache off): a
#             subrequest to waitroom for every request, as shipped before
#             the gate's verify cache. (Until then this slot was authreq-ka, the config
#             before 39b4934 made to keep its connections alive, which the
#             shipped one has done since.)
#   verify    waitroom's GET /gate/verify hit directly
#   healthz   waitroom's GET /healthz, to compare verify with
#   paired    gate and bypass at the same time, on two waitroom servers
#             (same binary, settings, Redis and upstream), each loaded by
#             its own wrk with half the connections, then the other way
#             round: the pass check's cost as the difference of the two
#             servers' CPU per request, which the machine's drift (a third
#             within minutes here) hits alike, as in scripts/bench-pair.sh.
#             Its rows (gate~, bypass~; two per repeat) give each server's
#             own CPU; redis and upstream there are the shared processes'
#             CPU over both runs' requests.
#
# gate, authreq, verify and paired run twice: with one pass (one admitted
# user in a hot loop; the pass's revocation check, one Redis read per 2 s,
# is then nearly free) and, as gate-N, authreq-N, verify-N and paired-N,
# with USERS passes (one per enter, each from its own X-Forwarded-For
# address, which the server believes from loopback: lib.sh; it limits
# enter per client), each request carrying the next. One
# waitroom (gate mode, 1h refill interval, session TTL 1h, refill size
# USERS+10 so every enter is admitted) serves gate, bypass, verify and
# healthz and answers authreq's subrequests; a second one, started only for
# paired, shares its Redis (so its keys: every pass opens both). One nginx
# serves nginx (its own server block and upstream) and both authreq.
#
# Runs are interleaved (every scenario once, REPEAT times, after a warm-up
# of each); per scenario it prints medians over the repeats of req/s, p50,
# p99 and the CPU per request (utime+stime deltas from /proc/PID/stat) of
# each process: waitroom, redis-server, the proxy nginx (master + worker)
# and the upstream nginx (master + worker), and their sum. Then the gate's
# targets, each ratio the median of the per-repeat ratios (the two runs of
# a ratio are minutes apart at most):
#   gate >= 0.8x nginx in req/s (one pass, and USERS passes)
#   the pass check <= 5 us of waitroom CPU per request: gate~ - bypass~
#   (paired; the one-after-the-other gate - bypass is shown too, but on a
#   shared machine it moves by tens of us from one repeat to the next)
#   /gate/verify >= 0.9x /healthz in req/s (and its CPU per request)
#   authreq (and authreq-N) >= 0.8x nginx, gate >= 0.9x bare
#   (gate-N, bare-N), in req/s, with the anchor's total CPU per request
#   over the subject's beside it
#
# Pinning (lib.sh, on with 2+ CPUs): waitroom, redis-server and both nginx
# on WR_SERVER_CPUS (CPU 1), wrk on WR_LOAD_CPUS (CPU 0); each nginx has one
# worker, as waitroom then has one CPU (GOMAXPROCS=1). So req/s is bounded
# by the server side's summed CPU per request, upstream included;
# UPSTREAM_CPUS=0 moves the upstream to wrk's core (an order site on a host
# of its own; wrk then has less CPU and may become the bound).
#
# PROFILE="gate bypass" (scenario names) takes a CPU profile of waitroom
# (WAITROOM_DEBUG_ADDR, net/http/pprof) during one extra run of each named
# scenario, PROFILE_SECONDS (10) long, and prints `go tool pprof -top -cum`
# of it; the profiles stay in RESULTS_DIR (or the temp dir with WR_KEEP=1).
#
# REPORT=DIR/results.tsv prints the summary of an earlier run (RESULTS_DIR)
# again and exits.
#
# With the defaults a run takes about 5 minutes.
#
# Env: THREADS (2), CONNS (64), DURATION (5s), REPEAT (3), WARMUP (2s),
# USERS (500; 0 or 1: no -N runs), SCENARIOS (all of the above, in that
# order), LOG_LEVEL (warn), NGINX (the nginx binary; default from PATH, else
# /usr/sbin/nginx), UPSTREAM_CPUS, PROFILE, PROFILE_SECONDS, RESULTS_DIR
# (keep wrk output and results.tsv), plus WAITROOM_BIN, WR_PIN,
# WR_SERVER_CPUS, WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP (lib.sh).
# Exits 1 if a measured run saw a non-2xx answer or a socket error.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
DURATION=${DURATION:-5s}
REPEAT=${REPEAT:-3}
WARMUP=${WARMUP:-2s}
USERS=${USERS:-500}
LOG_LEVEL=${LOG_LEVEL:-warn}
PROFILE=${PROFILE:-}
PROFILE_SECONDS=${PROFILE_SECONDS:-10}
QUEUE=default
LUA=$WR_ROOT/loadtest/wrk
[[ $USERS =~ ^[0-9]+$ ]] || wr_die "USERS=$USERS: want a number"
ALL="direct nginx gate bare bypass authreq authreq-nc verify healthz paired"
((USERS > 1)) && ALL="$ALL gate-N bare-N authreq-N verify-N paired-N"
SCENARIOS=${SCENARIOS:-$ALL}
for s in $SCENARIOS $PROFILE; do
	[[ " $ALL " == *" $s "* ]] || wr_die "unknown scenario $s (want some of: $ALL)"
done
for s in $PROFILE; do
	[[ $s != paired* ]] || wr_die "PROFILE: $s runs two servers; profile gate and bypass instead"
done

# summarize TSV: the table and the target verdicts of a results.tsv.
summarize() {
	awk -F'\t' '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# ratio(A, B, COL): the median over repeats of A/B in column COL, and the list.
function ratio(a, b, col,   r, l, k) {
	l = ""; k = ""
	for (r = 1; r <= nrep; r++) if ((a, r) in val && (b, r) in val && val[b, r, col] > 0) {
		k = k " " val[a, r, col] / val[b, r, col]
		l = l sprintf(" %.2f", val[a, r, col] / val[b, r, col])
	}
	if (k == "") return "-"
	return sprintf("%.2f [%s ]", median(substr(k, 2)), substr(l, 2))
}
function diff(a, b, col,   r, l, k) {
	l = ""; k = ""
	for (r = 1; r <= nrep; r++) if ((a, r) in val && (b, r) in val) {
		k = k " " val[a, r, col] - val[b, r, col]
		l = l sprintf(" %+.1f", val[a, r, col] - val[b, r, col])
	}
	if (k == "") return "-"
	return sprintf("%+.1f [%s ]", median(substr(k, 2)), substr(l, 2))
}
# pdiff(A, B, COL): paired runs 2r-1 and 2r ran A on one server and B on the
# other, then the other way round; the mean of the two differences cancels
# what differs between the servers. The median over repeats, and the list.
function pdiff(a, b, col,   r, l, k, d) {
	l = ""; k = ""
	for (r = 1; r + 1 <= nrep; r += 2) if ((a, r) in val && (b, r) in val && (a, r + 1) in val && (b, r + 1) in val) {
		d = (val[a, r, col] - val[b, r, col] + val[a, r + 1, col] - val[b, r + 1, col]) / 2
		k = k " " d
		l = l sprintf(" %+.1f (%+.1f, %+.1f)", d, val[a, r, col] - val[b, r, col], val[a, r + 1, col] - val[b, r + 1, col])
	}
	if (k == "") return "-"
	return sprintf("%+.1f [%s ]", median(substr(k, 2)), substr(l, 2))
}
function num(s) { return s + 0 }
function verdict(ok) { return ok ? "MET" : "MISSED" }
NR == 1 { next }
{
	if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 }
	for (c = 3; c <= 10; c++) { v[$1, c] = v[$1, c] " " $c; val[$1, $2, c] = $c }
	val[$1, $2] = 1
	if ($2 + 0 > nrep) nrep = $2 + 0
	errs[$1] += $11
}
END {
	printf "%-10s %8s %7s %7s %9s %7s %7s %9s %7s %7s\n", "scenario", "req/s", "p50 ms", "p99 ms", "waitroom", "redis", "nginx", "upstream", "total", "errors"
	for (i = 1; i <= ns; i++) {
		s = order[i]
		for (c = 3; c <= 10; c++) m[s, c] = median(substr(v[s, c], 2))
		printf "%-10s %8.0f %7.2f %7.2f %9.1f %7.1f %7.1f %9.1f %7.1f %7d\n", s, m[s, 3], m[s, 4] / 1000, m[s, 5] / 1000,
			m[s, 6], m[s, 7], m[s, 8], m[s, 9], m[s, 10], errs[s]
	}
	print ""
	print "ratios and differences: median over repeats [each repeat; paired: the mean of (both orientations)]"
	if (("gate", 1) in val && ("nginx", 1) in val) {
		r = ratio("gate", "nginx", 3)
		printf "  gate / nginx, req/s:                 %s  target >= 0.8: %s\n", r, verdict(num(r) >= 0.8)
	}
	if (("gate-N", 1) in val && ("nginx", 1) in val) {
		r = ratio("gate-N", "nginx", 3)
		printf "  gate-N / nginx, req/s:               %s  target >= 0.8: %s\n", r, verdict(num(r) >= 0.8)
	}
	if (("gate~", 1) in val && ("bypass~", 1) in val) {
		r = pdiff("gate~", "bypass~", 6)
		printf "  pass check, waitroom CPU us/request, gate~ - bypass~ (paired):     %s  target <= 5: %s\n", r, verdict(num(r) <= 5)
	}
	if (("gate-N~", 1) in val && ("bypass-N~", 1) in val) {
		r = pdiff("gate-N~", "bypass-N~", 6)
		printf "  pass check, waitroom CPU us/request, gate-N~ - bypass-N~ (paired): %s  target <= 5: %s\n", r, verdict(num(r) <= 5)
	}
	if (("gate", 1) in val && ("bypass", 1) in val) {
		printf "  pass check, waitroom CPU us/request, gate - bypass (one after the other):   %s\n", diff("gate", "bypass", 6)
	}
	if (("gate-N", 1) in val && ("bypass", 1) in val) {
		printf "  pass check, waitroom CPU us/request, gate-N - bypass (one after the other): %s\n", diff("gate-N", "bypass", 6)
	}
	if (("verify", 1) in val && ("healthz", 1) in val) {
		r = ratio("verify", "healthz", 3)
		printf "  verify / healthz, req/s:             %s  target >= 0.9: %s\n", r, verdict(num(r) >= 0.9)
		printf "  verify / healthz, waitroom CPU/req:  %s\n", ratio("verify", "healthz", 6)
	}
	if (("verify-N", 1) in val && ("healthz", 1) in val) {
		r = ratio("verify-N", "healthz", 3)
		printf "  verify-N / healthz, req/s:           %s  target >= 0.9: %s\n", r, verdict(num(r) >= 0.9)
		printf "  verify-N / healthz, waitroom CPU/req: %s\n", ratio("verify-N", "healthz", 6)
	}
	# The shipped forward auth >= 0.8x nginx alone, the Go gate
	# >= 0.9x a bare ReverseProxy; the CPU ratios are the anchor total
	# CPU per request over the subject one (>= the target too when CPU, not
	# something else, bounds req/s).
	split("authreq nginx 0.8|authreq-N nginx 0.8|authreq-nc nginx 0|gate bare 0.9|gate-N bare-N 0.9", pairs, "|")
	for (i = 1; i in pairs; i++) {
		split(pairs[i], pr, " ")
		if (!((pr[1], 1) in val && (pr[2], 1) in val)) continue
		r = ratio(pr[1], pr[2], 3)
		printf "  %-24s %s", pr[1] " / " pr[2] ", req/s:", r
		if (pr[3] > 0) printf "  target >= %s: %s", pr[3], verdict(num(r) >= pr[3] + 0)
		printf "\n  %-24s %s\n", pr[2] " / " pr[1] ", CPU/req:", ratio(pr[2], pr[1], 10)
	}
	# What the proxy in front costs, upstream aside: waitroom + Redis in
	# gate, nginx in nginx, nginx + waitroom + Redis in authreq.
	printf "  CPU us/request in front of the upstream (total - upstream):"
	for (i = 1; i <= ns; i++) if (order[i] !~ /^(direct|verify|healthz|verify-N)$/ && order[i] !~ /~$/)
		printf " %s %.1f", order[i], m[order[i], 10] - m[order[i], 9]
	printf "\n"
}' "$1"
}

# REPORT=results.tsv: only the summary of an earlier run (RESULTS_DIR).
if [[ -n ${REPORT:-} ]]; then
	summarize "$REPORT"
	exit
fi

# nginx_bin prints the nginx binary: NGINX, else nginx on PATH, else Debian's
# /usr/sbin/nginx (not on a non-root PATH).
nginx_bin() {
	local p
	for p in "${NGINX:-}" "$(command -v nginx 2>/dev/null || true)" /usr/sbin/nginx; do
		[[ -n $p && -x $p ]] && { echo "$p"; return 0; }
	done
	return 1
}
{ command -v wrk >/dev/null && nginx_bin >/dev/null; } || "$WR_ROOT/scripts/install-tools.sh" bench >&2
NGINX=$(nginx_bin) || wr_die "nginx not found (scripts/install-tools.sh bench, or set NGINX)"
command -v curl >/dev/null || wr_die "curl not found"

wr_init
wr_build
PIN_UPSTREAM=("${WR_PIN_SERVER[@]}")
if [[ -n ${UPSTREAM_CPUS:-} && ${#WR_PIN_SERVER[@]} -gt 0 ]]; then
	PIN_UPSTREAM=(taskset -c "$UPSTREAM_CPUS")
fi
UPSTREAM_WHERE="with the server"
[[ ${#PIN_UPSTREAM[@]} -gt 0 ]] && UPSTREAM_WHERE="on CPU ${PIN_UPSTREAM[2]}"
[[ ${#WR_PIN_SERVER[@]} -gt 0 ]] || UPSTREAM_WHERE="unpinned"

# nginx_main DIR: the main nginx.conf around DIR/site.conf, as the e2e test
# writes it: one worker, no access log, everything in DIR.
nginx_main() {
	local dir=$1 user=""
	# As root, workers would run as nobody, who cannot enter the temp dir.
	[[ $(id -u) == 0 ]] && user="user root;"
	cat >"$dir/nginx.conf" <<EOF
$user
worker_processes 1;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    # Go's server closes no connection after N requests; nginx does after
    # 1000 by default, which would make wrk reconnect in its scenarios only.
    keepalive_requests 1000000;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    include $dir/site.conf;
}
EOF
}

# start_nginx NAME PORT PIN...: runs nginx with $WR_TMP/NAME/nginx.conf in
# the foreground (its master is ours to stop) and waits until PORT answers.
# Sets NGINX_PID.
start_nginx() {
	local name=$1 port=$2 dir=$WR_TMP/$1
	shift 2
	"$@" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;' >"$dir/stdout.log" 2>&1 &
	NGINX_PID=$!
	WR_PIDS+=("$NGINX_PID")
	wr_await 100 "$NGINX_PID" "$dir/error.log" "nginx ($name) did not start" \
		curl -sS -o /dev/null --max-time 1 "http://127.0.0.1:$port/"
	wr_log "nginx ($name) pid $NGINX_PID on 127.0.0.1:$port"
}

# cpu_tree PID prints the CPU ticks of PID and its children (nginx: master
# and workers).
cpu_tree() {
	local t c
	t=$(wr_cpu_ticks "$1")
	for c in $(pgrep -P "$1" || true); do
		t=$((t + $(wr_cpu_ticks "$c" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# new_port VAR: sets VAR to a free port that no earlier new_port gave (ports
# not listened on yet look free to wr_free_port).
USED_PORTS=" "
new_port() {
	local p
	p=$(wr_free_port)
	while [[ $USED_PORTS == *" $p "* ]]; do p=$(wr_free_port); done
	USED_PORTS+="$p "
	printf -v "$1" '%s' "$p"
}

# The upstream: a fixed small page on every path.
mkdir -p "$WR_TMP/upstream"
new_port UP_PORT
PAGE='<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head><body><h1>Order page</h1><p>Seats for event 7.</p></body></html>'
cat >"$WR_TMP/upstream/site.conf" <<EOF
server {
    listen 127.0.0.1:$UP_PORT backlog=4096;
    location / {
        default_type text/html;
        return 200 '$PAGE';
    }
}
EOF
nginx_main "$WR_TMP/upstream"
start_nginx upstream "$UP_PORT" "${PIN_UPSTREAM[@]}"
UP_PID=$NGINX_PID
UP_URL=http://127.0.0.1:$UP_PORT

wr_start_redis
DEBUG_PORT=""
debug_env=()
if [[ -n $PROFILE ]]; then
	new_port DEBUG_PORT
	debug_env=(WAITROOM_DEBUG_ADDR="127.0.0.1:$DEBUG_PORT")
fi
wr_env=(WAITROOM_ADMIN_TOKEN="$(wr_token)" WAITROOM_QUEUES="$QUEUE"
	WAITROOM_UPSTREAM="$UP_URL" WAITROOM_GATE_BYPASS=/static/
	WAITROOM_REFILL_INTERVAL=1h WAITROOM_REFILL_SIZE=$((USERS + 10)) WAITROOM_SESSION_TTL=1h
	WAITROOM_COOKIE_SECURE=false WAITROOM_LOG_LEVEL="$LOG_LEVEL")
wr_start_server "${wr_env[@]}" "${debug_env[@]}"
WR_URL=$WR_BASE_URL
WR_PID=$WR_SERVER_PID
WR_PORT=$WR_SERVER_PORT
# The second server, for paired only.
WR2_URL=""
WR2_PID=""
if [[ " $SCENARIOS " == *" paired"* ]]; then
	WR_INSTANCE=-2
	wr_start_server "${wr_env[@]}"
	WR_INSTANCE=""
	WR2_URL=$WR_BASE_URL
	WR2_PID=$WR_SERVER_PID
fi

# The bare proxy (bare, bare-N): scripts/bare in front of the same
# upstream, started as waitroom is (same pinning, lib.sh).
BARE_URL=""
BARE_PID=""
if [[ " $SCENARIOS " == *" bare"* ]]; then
	wr_log "building scripts/bare"
	(cd "$WR_ROOT" && go build -o "$WR_TMP/bare" ./scripts/bare) || wr_die "go build failed"
	WR_BIN_GATE=$WR_BIN WR_BIN=$WR_TMP/bare WR_INSTANCE=-bare
	wr_start_server WAITROOM_UPSTREAM="$UP_URL"
	WR_BIN=$WR_BIN_GATE WR_INSTANCE=""
	BARE_URL=$WR_BASE_URL
	BARE_PID=$WR_SERVER_PID
fi

# The passes: one enter each, all admitted at once (the bucket is full),
# each from its own client address (X-Forwarded-For, believed from
# loopback: lib.sh), as the server limits enter per client (5/s burst 300).
PASS1=$WR_TMP/pass-1.txt
PASSN=$WR_TMP/pass-n.txt
n=$((USERS > 1 ? USERS : 1))
wr_log "entering $n users for their passes"
: >"$PASSN"
for ((i = 0; i < n; i++)); do
	ans=$(curl -fsS --max-time 5 -X POST -H 'Content-Type: application/json' -d '{}' \
		-H "X-Forwarded-For: $(wr_client_addr "$i")" \
		"$WR_URL/api/v1/queues/$QUEUE/enter") || wr_die "enter failed"
	p=$(sed -n 's/.*"pass":"\([^"]*\)".*/\1/p' <<<"$ans")
	[[ -n $p ]] || wr_die "enter $i gave no pass (not ENTERED?): $ans"
	echo "$p" >>"$PASSN"
done
head -n1 "$PASSN" >"$PASS1"

# The proxy nginx: the plain proxy (nginx), the shipped forward-auth config
# (authreq), addresses swapped as internal/testkit/e2e/nginx_test.go does, and the
# same without its verify cache (authreq-nc).
mkdir -p "$WR_TMP/proxy/cache"
new_port B_PORT
new_port D_PORT
new_port K_PORT
conf=$(<"$WR_ROOT/deploy/nginx/waitroom.conf")
for swap in "server waitroom:8080;|server 127.0.0.1:$WR_PORT;" \
	"server demo-order:8081;|server 127.0.0.1:$UP_PORT;" \
	"listen 80;|listen 127.0.0.1:$D_PORT backlog=4096;" \
	"/var/cache/nginx/waitroom_auth|$WR_TMP/proxy/cache/waitroom_auth"; do
	old=${swap%%|*}
	[[ $conf == *"$old"* ]] || wr_die "deploy/nginx/waitroom.conf no longer has \"$old\""
	conf=${conf//"$old"/"${swap#*|}"}
done
# nocache: the same config beside it with the verify cache off, every name
# of its own (upstreams, locations, cache zone, maps) given a suffix.
nocache=$(sed -e 's#waitroom_auth#waitroom_auth_nc#g; s#proxy_cache waitroom_auth_nc;#proxy_cache off;#' \
	-e 's#upstream waitroom {#upstream waitroom_nc {#; s#http://waitroom\([/;]\)#http://waitroom_nc\1#g' \
	-e 's#upstream order_site {#upstream order_site_nc {#; s#http://order_site;#http://order_site_nc;#g' \
	-e "s#listen 127.0.0.1:$D_PORT #listen 127.0.0.1:$K_PORT #" <<<"$conf")
[[ $nocache == *'proxy_cache off;'* && $nocache == *'upstream waitroom_nc {'* && $nocache == *"listen 127.0.0.1:$K_PORT "* ]] ||
	wr_die "could not derive the uncached variant of deploy/nginx/waitroom.conf"
{
	echo "$conf"
	echo
	echo "$nocache"
	# The anchor: the same proxy settings as the shipped config, no check.
	cat <<EOF

upstream bench_plain {
    server 127.0.0.1:$UP_PORT;
    keepalive 64;
}

server {
    listen 127.0.0.1:$B_PORT backlog=4096;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host \$host;
    proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto \$scheme;
    proxy_set_header X-Forwarded-Host \$host;
    location / {
        proxy_pass http://bench_plain;
    }
}
EOF
} >"$WR_TMP/proxy/site.conf"
nginx_main "$WR_TMP/proxy"
start_nginx proxy "$B_PORT" "${WR_PIN_SERVER[@]}"
PX_PID=$NGINX_PID

# scenario NAME: prints "URL PATH PASSFILE".
scenario() {
	case $1 in
	direct) echo "$UP_URL / $PASS1" ;;
	nginx) echo "http://127.0.0.1:$B_PORT / $PASS1" ;;
	gate) echo "$WR_URL / $PASS1" ;;
	bypass) echo "$WR_URL /static/app.css $PASS1" ;;
	authreq) echo "http://127.0.0.1:$D_PORT / $PASS1" ;;
	authreq-nc) echo "http://127.0.0.1:$K_PORT / $PASS1" ;;
	bare) echo "$BARE_URL / $PASS1" ;;
	bare-N) echo "$BARE_URL / $PASSN" ;;
	verify) echo "$WR_URL /gate/verify $PASS1" ;;
	healthz) echo "$WR_URL /healthz $PASS1" ;;
	gate-N) echo "$WR_URL / $PASSN" ;;
	authreq-N) echo "http://127.0.0.1:$D_PORT / $PASSN" ;;
	verify-N) echo "$WR_URL /gate/verify $PASSN" ;;
	esac
}

# Each scenario answers as it should before anything is measured: the
# page through every proxy, 204 from verify, and no page without a pass.
cookie="wr_pass_$QUEUE=$(<"$PASS1")"
for s in direct nginx gate bare bypass authreq authreq-nc; do
	[[ $s != bare || -n $BARE_URL ]] || continue
	read -r url path _ <<<"$(scenario "$s")"
	body=$(curl -fsS --max-time 5 -H "Cookie: $cookie" "$url$path") || wr_die "$s: $url$path failed"
	[[ $body == "$PAGE" ]] || wr_die "$s: $url$path did not answer the upstream's page: $body"
done
for url in "$WR_URL" $WR2_URL; do
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -H "Cookie: $cookie" "$url/gate/verify")
	[[ $code == 204 ]] || wr_die "$url/gate/verify with the pass answered $code"
	body=$(curl -fsS --max-time 5 -H "Cookie: $cookie" "$url/") || wr_die "$url/ with the pass failed"
	[[ $body == "$PAGE" ]] || wr_die "$url/ did not answer the upstream's page: $body"
done
for url in "$WR_URL/" "http://127.0.0.1:$D_PORT/" "http://127.0.0.1:$K_PORT/"; do
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "$url")
	[[ $code == 303 || $code == 401 ]] || wr_die "$url without a pass answered $code"
done

CLK_TCK=$(getconf CLK_TCK)
OUT=${RESULTS_DIR:-$WR_TMP/results}
mkdir -p "$OUT"
TSV=$OUT/results.tsv
printf 'scenario\trep\trps\tp50_us\tp99_us\twaitroom_us\tredis_us\tnginx_us\tupstream_us\ttotal_us\terrors\n' >"$TSV"

# run_wrk SCENARIO REP [DURATION]: one wrk run and the CPU of every
# process over it, appended to $TSV (REP w = warm-up, p = profile: not
# appended).
run_wrk() {
	local name=$1 rep=$2 dur=${3:-$DURATION} url path passes
	if [[ $name == paired* ]]; then
		run_paired "$@"
		return
	fi
	read -r url path passes <<<"$(scenario "$name")"
	local log=$OUT/$name-$rep.txt
	local w0 r0 n0 u0 w1 r1 n1 u1 wpid=$WR_PID
	[[ $name == bare* ]] && wpid=$BARE_PID # in the waitroom column
	w0=$(wr_cpu_ticks "$wpid")
	r0=$(wr_cpu_ticks "$WR_REDIS_PID")
	n0=$(cpu_tree "$PX_PID")
	u0=$(cpu_tree "$UP_PID")
	env PASSES="$passes" URL_PATH="$path" QUEUE="$QUEUE" timeout $(($(wr_seconds "$dur") + 30)) \
		"${WR_PIN_LOAD[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$dur" --latency -s "$LUA/gate.lua" "$url" >"$log" 2>&1 ||
		{ cat "$log" >&2; wr_die "wrk $name failed"; }
	w1=$(wr_cpu_ticks "$wpid")
	r1=$(wr_cpu_ticks "$WR_REDIS_PID")
	n1=$(cpu_tree "$PX_PID")
	u1=$(cpu_tree "$UP_PID")
	local res
	res=$(grep '^WRK_RESULT ' "$log") || { cat "$log" >&2; wr_die "no WRK_RESULT from wrk $name"; }
	local row
	row=$(awk -v res="$res" -v name="$name" -v rep="$rep" -v clk="$CLK_TCK" \
		-v dw="$((w1 - w0))" -v dr="$((r1 - r0))" -v dn="$((n1 - n0))" -v du="$((u1 - u0))" 'BEGIN {
		n = split(res, kv, " ")
		for (i = 2; i <= n; i++) { split(kv[i], p, "="); f[p[1]] = p[2] }
		us = 1e6 / clk / f["requests"]
		printf "%s\t%s\t%.0f\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\n", name, rep, f["rps"], f["p50_us"], f["p99_us"],
			dw * us, dr * us, dn * us, du * us, (dw + dr + dn + du) * us, f["non2xx"] + f["socket_errors"]
	}')
	wr_log "$(tr '\t' ' ' <<<"$row")"
	[[ $rep == w || $rep == p ]] || echo "$row" >>"$TSV"
}

# run_paired paired|paired-N REP [DURATION]: gate on one server and bypass
# on the other at once, then the other way round; a row per server and
# run, scenario gate~ or bypass~ (paired-N: gate-N~, bypass-N~), the runs
# numbered 2*REP-1 and 2*REP (REP w, p: not appended).
run_paired() {
	local name=$1 rep=$2 dur=${3:-$DURATION} passes=$PASS1 sfx="~" o
	[[ $name == paired-N ]] && passes=$PASSN sfx="-N~"
	for o in 0 1; do
		local -a urls=("$WR_URL" "$WR2_URL") pids=("$WR_PID" "$WR2_PID") paths=(/ /static/app.css)
		local -a names=("gate$sfx" "bypass$sfx")
		((o == 0)) || paths=(/static/app.css /) names=("bypass$sfx" "gate$sfx")
		local -a w0 w1 wpid
		local r0 r1 u0 u1 x
		for x in 0 1; do w0[x]=$(wr_cpu_ticks "${pids[x]}"); done
		r0=$(wr_cpu_ticks "$WR_REDIS_PID")
		u0=$(cpu_tree "$UP_PID")
		for x in 0 1; do
			env PASSES="$passes" URL_PATH="${paths[x]}" QUEUE="$QUEUE" timeout $(($(wr_seconds "$dur") + 30)) \
				"${WR_PIN_LOAD[@]}" wrk -t1 -c$((CONNS / 2)) -d"$dur" --latency -s "$LUA/gate.lua" "${urls[x]}" \
				>"$OUT/$name-$rep-$o-$x.txt" 2>&1 &
			wpid[x]=$!
		done
		for x in 0 1; do
			wait "${wpid[x]}" || { cat "$OUT/$name-$rep-$o-$x.txt" >&2; wr_die "wrk $name ($x) failed"; }
		done
		for x in 0 1; do w1[x]=$(wr_cpu_ticks "${pids[x]}"); done
		r1=$(wr_cpu_ticks "$WR_REDIS_PID")
		u1=$(cpu_tree "$UP_PID")
		local res0 res1 run=$rep
		[[ $rep == w || $rep == p ]] || run=$((2 * rep - 1 + o))
		res0=$(grep '^WRK_RESULT ' "$OUT/$name-$rep-$o-0.txt") || wr_die "no WRK_RESULT from wrk $name (0)"
		res1=$(grep '^WRK_RESULT ' "$OUT/$name-$rep-$o-1.txt") || wr_die "no WRK_RESULT from wrk $name (1)"
		local rows
		rows=$(awk -v res0="$res0" -v res1="$res1" -v n0="${names[0]}" -v n1="${names[1]}" -v run="$run" -v clk="$CLK_TCK" \
			-v dw0="$((w1[0] - w0[0]))" -v dw1="$((w1[1] - w0[1]))" -v dr="$((r1 - r0))" -v du="$((u1 - u0))" '
			function parse(res, f,   n, kv, i, p) {
				n = split(res, kv, " ")
				for (i = 2; i <= n; i++) { split(kv[i], p, "="); f[p[1]] = p[2] }
			}
			BEGIN {
				parse(res0, a); parse(res1, b)
				both = 1e6 / clk / (a["requests"] + b["requests"])
				row(n0, a, dw0); row(n1, b, dw1)
			}
			function row(name, f, dw,   us) {
				us = 1e6 / clk / f["requests"]
				printf "%s\t%s\t%.0f\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\n", name, run, f["rps"], f["p50_us"], f["p99_us"],
					dw * us, dr * both, 0, du * both, dw * us + (dr + du) * both, f["non2xx"] + f["socket_errors"]
			}')
		wr_log "$(tr '\t' ' ' <<<"$rows" | paste -sd '|' | sed 's/|/  |  /')"
		[[ $rep == w || $rep == p ]] || echo "$rows" >>"$TSV"
	done
}

wr_log "wrk -t$THREADS -c$CONNS -d$DURATION, $REPEAT repeats, $USERS users for the -N runs; CLK_TCK=$CLK_TCK"
wr_log "upstream nginx pid $UP_PID ($UPSTREAM_WHERE), proxy nginx pid $PX_PID, waitroom pid $WR_PID${WR2_PID:+ and $WR2_PID (paired)}, redis pid $WR_REDIS_PID"
if [[ $(wr_seconds "$WARMUP") -gt 0 ]]; then
	wr_log "warm-up ($WARMUP each, not counted)"
	for s in $SCENARIOS; do run_wrk "$s" w "$WARMUP"; done
fi
for rep in $(seq "$REPEAT"); do
	for s in $SCENARIOS; do run_wrk "$s" "$rep"; done
done

for s in $PROFILE; do
	wr_log "profile of waitroom during $s (${PROFILE_SECONDS}s)"
	curl -fsS --max-time $((PROFILE_SECONDS + 30)) -o "$OUT/$s.pprof" \
		"http://127.0.0.1:$DEBUG_PORT/debug/pprof/profile?seconds=$PROFILE_SECONDS" &
	prof=$!
	sleep 0.5
	run_wrk "$s" p "$((PROFILE_SECONDS - 1))s"
	wait "$prof" || wr_die "profile of $s failed"
done

echo
echo "waitroom gate bench: wrk -t$THREADS -c$CONNS -d$DURATION, medians of $REPEAT interleaved runs; log level $LOG_LEVEL"
echo "pinning: $WR_PINNING; both nginx on the server's CPU, one worker each, the upstream $UPSTREAM_WHERE"
echo "$NGINX: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); CPU us per request of each process (nginx: master + worker)"
summarize "$TSV"

for s in $PROFILE; do
	echo
	echo "waitroom CPU profile during $s ($OUT/$s.pprof):"
	go tool pprof -top -cum -nodecount=40 "$WR_BIN" "$OUT/$s.pprof" 2>/dev/null
done
[[ -n ${RESULTS_DIR:-} ]] && echo "raw results: $OUT"

if awk -F'\t' 'NR > 1 && $11 > 0 { bad = 1 } END { exit !bad }' "$TSV"; then
	wr_log "some runs saw errors (non-2xx or socket errors): see the errors column"
	exit 1
fi

# shellcheck shell=bash
# Shared start/stop for scripts/bench.sh and scripts/loadtest.sh: a private
# redis-server and a waitroom server on free loopback ports, both stopped
# (and the temp dir removed) when the calling script exits. Source it after
# `set -euo pipefail`; do not run it.
#
# Knobs (env):
#   WAITROOM_BIN  use this binary instead of building ./cmd/waitroom
#   WR_PIN        1: pin the server to CPU WR_SERVER_CPUS, redis-server to
#                 WR_REDIS_CPUS and the load generator to WR_LOAD_CPUS with
#                 taskset; 0: no pinning. Default 1 when the machine has 2+ CPUs.
#   WR_SERVER_CPUS / WR_REDIS_CPUS / WR_LOAD_CPUS  taskset CPU lists
#                 (default 1 / same as the server / 0)
#   WR_KEEP=1     keep the temp dir (logs) after exit
#
# The server trusts loopback as a proxy (WAITROOM_TRUSTED_PROXIES=
# 127.0.0.1/32,::1/128, see wr_start_server), so that the load generators,
# all on loopback, can speak for many clients: the server limits enter and
# status per client address (WAITROOM_LIMIT_*), and a crowd comes from many
# addresses. Each virtual client sends its own X-Forwarded-For
# (loadtest/wrk/clients.lua, loadtest/lib.js, lab/cmd/wr-million, wr_client_addr
# here); a request without one is the loopback client, as before.

# Set here, read by the scripts that source this file.
# shellcheck disable=SC2034
WR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WR_TMP=""
WR_PIDS=()
WR_REDIS_PORT=""
WR_REDIS_PID=""
WR_SERVER_PORT=""
WR_SERVER_PID=""
WR_BASE_URL=""
WR_BIN=""
WR_INSTANCE="" # suffix of the log files, when a script starts more than one pair
WR_PIN_SERVER=()
WR_PIN_REDIS=()
WR_PINNING="off" # the pinning in force, in words
# shellcheck disable=SC2034
WR_PIN_LOAD=()

wr_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
wr_die() { wr_log "error: $*"; exit 1; }

# wr_init makes the temp dir, installs the cleanup trap and works out pinning.
wr_init() {
	WR_TMP=$(mktemp -d "${TMPDIR:-/tmp}/waitroom-run.XXXXXX")
	trap wr_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local ncpu
	ncpu=$(nproc)
	local pin=${WR_PIN:-}
	if [[ -z $pin ]]; then
		if ((ncpu >= 2)); then pin=1; else pin=0; fi
	fi
	if [[ $pin == 1 ]]; then
		command -v taskset >/dev/null || wr_die "WR_PIN=1 needs taskset (util-linux)"
		local server=${WR_SERVER_CPUS:-1} load=${WR_LOAD_CPUS:-0}
		local redis=${WR_REDIS_CPUS:-$server}
		WR_PIN_SERVER=(taskset -c "$server")
		WR_PIN_REDIS=(taskset -c "$redis")
		WR_PIN_LOAD=(taskset -c "$load")
		WR_PINNING="server on CPU $server, redis on CPU $redis, load generator on CPU $load"
		wr_log "pinning: $WR_PINNING"
	else
		wr_log "pinning: off"
	fi
}

# wr_cleanup stops what we started, newest first: TERM, then KILL after 5 s.
wr_cleanup() {
	local rc=$?
	local i pid
	for ((i = ${#WR_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${WR_PIDS[i]}
		kill -TERM "$pid" 2>/dev/null || continue
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [[ -n $WR_TMP && -d $WR_TMP ]]; then
		if [[ ${WR_KEEP:-0} == 1 || $rc -ne 0 ]]; then
			wr_log "logs kept in $WR_TMP"
		else
			rm -rf "$WR_TMP"
		fi
	fi
	exit "$rc"
}

# wr_free_port prints a TCP port on 127.0.0.1 that nothing listens on, below
# the kernel's ephemeral range: a port in that range may be the local end of
# an outgoing connection (wrk's, the server's to Redis), which nothing
# listens on but which makes bind fail ("Address already in use").
wr_free_port() {
	local p lo=32768 _hi
	read -r lo _hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	((lo > 21024)) || wr_die "ephemeral ports start at $lo: no room below for private ports"
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % (lo - 20000)))
		[[ $p == "$WR_REDIS_PORT" || $p == "$WR_SERVER_PORT" ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	wr_die "no free port found"
}

# wr_build builds ./cmd/waitroom into the temp dir (or takes WAITROOM_BIN).
wr_build() {
	if [[ -n ${WAITROOM_BIN:-} ]]; then
		WR_BIN=$WAITROOM_BIN
		[[ -x $WR_BIN ]] || wr_die "WAITROOM_BIN=$WR_BIN is not executable"
		return
	fi
	wr_log "building ./cmd/waitroom"
	(cd "$WR_ROOT" && go build -o "$WR_TMP/waitroom" ./cmd/waitroom) || wr_die "go build failed"
	WR_BIN=$WR_TMP/waitroom
}

# wr_start_redis starts a throwaway redis-server: loopback only, no RDB, no AOF.
wr_start_redis() {
	command -v redis-server >/dev/null || wr_die "redis-server not found"
	WR_REDIS_PORT=$(wr_free_port)
	"${WR_PIN_REDIS[@]}" redis-server --bind 127.0.0.1 --port "$WR_REDIS_PORT" \
		--save '' --appendonly no --dir "$WR_TMP" --logfile "$WR_TMP/redis$WR_INSTANCE.log" \
		--daemonize no --protected-mode yes &
	WR_REDIS_PID=$!
	WR_PIDS+=("$WR_REDIS_PID")
	wr_await 100 "$WR_REDIS_PID" "$WR_TMP/redis$WR_INSTANCE.log" "redis-server did not start" wr_redis_pong
	wr_log "redis-server pid $WR_REDIS_PID on 127.0.0.1:$WR_REDIS_PORT"
}

wr_redis_pong() { [[ $(redis-cli -p "$WR_REDIS_PORT" ping 2>/dev/null) == PONG ]]; }

# wr_await TRIES PID LOG MESSAGE CHECK...: runs CHECK every 0.1 s until it
# succeeds; dies with MESSAGE and LOG's tail if PID exits or TRIES run out.
wr_await() {
	local tries=$1 pid=$2 log=$3 msg=$4
	shift 4
	for _ in $(seq "$tries"); do
		"$@" && return
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$log" >&2 || true
	wr_die "$msg"
}

# wr_redis runs redis-cli against the private redis.
wr_redis() { redis-cli -p "$WR_REDIS_PORT" "$@"; }

# wr_start_server NAME=VALUE... starts the server with the given extra env
# (on top of WAITROOM_ADDR, WAITROOM_REDIS_URL, WAITROOM_TRUSTED_PROXIES,
# which trusts loopback: see the top, WAITROOM_TRUSTED_PROXIES= among the
# arguments trusts nobody; and metrics on a free loopback port, so that
# servers side by side do not all try :9090) and waits for /readyz.
wr_start_server() {
	WR_SERVER_PORT=$(wr_free_port)
	WR_BASE_URL=http://127.0.0.1:$WR_SERVER_PORT
	env WAITROOM_ADDR="127.0.0.1:$WR_SERVER_PORT" \
		WAITROOM_REDIS_URL="redis://127.0.0.1:$WR_REDIS_PORT/0" \
		WAITROOM_TRUSTED_PROXIES=127.0.0.1/32,::1/128 \
		WAITROOM_METRICS_ADDR=127.0.0.1:0 \
		WAITROOM_POW_NETWORK_BITS="${WR_POW_NETWORK_BITS:-off}" \
		"$@" "${WR_PIN_SERVER[@]}" "$WR_BIN" >"$WR_TMP/server$WR_INSTANCE.log" 2>&1 &
	WR_SERVER_PID=$!
	WR_PIDS+=("$WR_SERVER_PID")
	wr_await 150 "$WR_SERVER_PID" "$WR_TMP/server$WR_INSTANCE.log" "waitroom did not become ready" \
		curl -fsS -o /dev/null --max-time 1 "$WR_BASE_URL/readyz"
	wr_log "waitroom pid $WR_SERVER_PID on $WR_BASE_URL ($(wr_redact "$@"))"
}

# wr_redact NAME=VALUE... prints the assignments with the values of
# tokens, secrets and keys replaced by ***, for logs.
wr_redact() {
	local a out=()
	for a in "$@"; do
		case ${a%%=*} in
		*TOKEN* | *SECRET* | *KEY*) out+=("${a%%=*}=***") ;;
		*) out+=("$a") ;;
		esac
	done
	echo "${out[*]}"
}

# wr_cpu_ticks PID prints utime+stime of a process (all its threads) in clock
# ticks, from /proc/PID/stat fields 14 and 15.
wr_cpu_ticks() {
	local stat
	stat=$(<"/proc/$1/stat")
	stat=${stat##*) } # drop "pid (comm) ": comm may hold spaces
	local -a f
	read -ra f <<<"$stat"
	# f[0] is field 3 (state), so utime (14) is f[11] and stime (15) is f[12].
	echo $((f[11] + f[12]))
}

# wr_seconds turns a wrk/k6 style duration (30s, 2m, 1h, 90) into seconds.
wr_seconds() {
	local d=$1
	case $d in
	*ms) echo 1 ;;
	*s) echo "${d%s}" ;;
	*m) echo $((${d%m} * 60)) ;;
	*h) echo $((${d%h} * 3600)) ;;
	*) echo "$d" ;;
	esac
}

# wr_enter_ids LOG prints N from the ENTER_IDS line of a wrk run of
# loadtest/wrk/enter.lua: every id ID_PREFIXn with n < N was sent.
wr_enter_ids() { sed -n 's/^ENTER_IDS .*dense_below=\([0-9]*\).*/\1/p' "$1"; }

# wr_client_addr N prints the client address of virtual client N >= 0, for
# X-Forwarded-For: the same pseudo-random IPv4 as client_addr in
# loadtest/wrk/clients.lua (distinct for N < 100 * 2^24, never loopback).
wr_client_addr() {
	local n=$1 lo
	lo=$((n % 16777216 * 40503 % 16777216))
	echo "$((11 + n / 16777216 % 100)).$((lo >> 16)).$((lo >> 8 & 255)).$((lo & 255))"
}

# wr_token prints a random admin token: 30 random bytes, 40 characters
# (the service refuses one under 32 bytes, config.MinAdminTokenBytes).
wr_token() { head -c 30 /dev/urandom | base64 | tr '+/' '-_'; }

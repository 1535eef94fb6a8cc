#!/usr/bin/env bash
# Run waitroom with Redis locally: the one command.
#
#   scripts/up.sh            build local images, start Redis, 3 waitroom
#                            replicas in gate mode behind an nginx load
#                            balancer and the demo order page behind the gate,
#                            detached; wait for /readyz through the balancer
#   scripts/up.sh logs -f    any other arguments go to docker compose as-is
#                            (ps, logs, down, down -v, ...); for up, create
#                            and run the images are picked (and built) first,
#                            as above: scripts/up.sh up -d --scale waitroom=5
#   scripts/up.sh token      print the admin token (made if there is none yet),
#                            e.g. WAITROOM_ADMIN_TOKEN=$(scripts/up.sh token)
#                            docker compose up --build
#
# The admin token: WAITROOM_ADMIN_TOKEN if set, else the one kept in
# .waitroom/admin-token (git-ignored, mode 0600), which the first run makes
# from 32 random bytes and prints once. There is no default token; compose
# run without one leaves the admin API off.
#
# Redis and the load balancer are the public redis:7-alpine and
# nginx:1.27-alpine where they can be pulled, else images built from this
# host's redis-server and nginx (scripts/redis-image.sh). The service image
# is compiled on the host (scripts/build-images.sh app), so no golang base
# image is needed. Set WAITROOM_REDIS_IMAGE / WAITROOM_LB_IMAGE /
# WAITROOM_IMAGE to run other images; with registry access,
# `docker compose up --build` works too.
#
# The service's other settings (webhooks, max_active, lanes, proof of
# work ...) go in the env file compose passes to every replica,
# WAITROOM_ENV_FILE (.waitroom/waitroom.env: made empty if missing, by any
# command of this script).
#
# Other knobs: WAITROOM_PORT (host port, 8080), WAITROOM_ADMIN_TOKEN,
# WAITROOM_STATE_DIR (where the token and env file are kept, .waitroom),
# WAITROOM_SUBNET (the project's network, 172.30.78.0/24),
# COMPOSE_PROJECT_NAME (waitroom).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

state_dir=${WAITROOM_STATE_DIR:-$root/.waitroom}
token_file=$state_dir/admin-token

# new_admin_token makes the token file, readable by this user only, unless
# it is there; it reports on stderr whether it made one. The file is
# written under another name and renamed, so a run cut short never leaves
# a half-written token behind.
new_admin_token() {
	if [ -s "$token_file" ]; then
		return 1
	fi
	mkdir -p "$state_dir"
	chmod 700 "$state_dir"
	(
		umask 077
		od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$token_file.tmp"
	)
	mv "$token_file.tmp" "$token_file"
}

# The env file compose passes to the replicas must exist, or compose
# refuses to start; an empty one sets nothing.
export WAITROOM_ENV_FILE=${WAITROOM_ENV_FILE:-$state_dir/waitroom.env}
if [ ! -e "$WAITROOM_ENV_FILE" ]; then
	mkdir -p "$(dirname "$WAITROOM_ENV_FILE")"
	# It may come to hold the webhook secret: this user's only.
	(
		umask 077
		: >"$WAITROOM_ENV_FILE"
	)
fi

if [ "${1:-}" = token ]; then
	if [ -n "${WAITROOM_ADMIN_TOKEN:-}" ]; then
		echo "$WAITROOM_ADMIN_TOKEN"
	else
		new_admin_token && echo "made a new admin token in $token_file" >&2
		# The file holds the token alone, with no newline; a terminal
		# wants one after it, and $(...) drops it again.
		cat "$token_file"
		echo
	fi
	exit 0
fi

if ! docker info >/dev/null 2>&1; then
	echo "docker is not usable here (is the daemon running, may this user use it?)" >&2
	exit 1
fi

# Compose v2 plugin when present, else the standalone docker-compose (v1 on Debian 12).
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose)
else
	echo "need docker compose or docker-compose (apt-get install docker-compose)" >&2
	exit 1
fi

# Without this the project is named after the checkout directory.
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-waitroom}
export WAITROOM_IMAGE=${WAITROOM_IMAGE:-waitroom/waitroom:local}

if [ -z "${WAITROOM_ADMIN_TOKEN:-}" ]; then
	token_note="admin token: in $token_file"
	# Other compose commands get the token kept, but do not make one.
	if [ "$#" -eq 0 ] && new_admin_token; then
		token_note="admin token (printed this once; kept in $token_file): $(cat "$token_file")"
	fi
	if [ -s "$token_file" ]; then
		WAITROOM_ADMIN_TOKEN=$(cat "$token_file")
		export WAITROOM_ADMIN_TOKEN
	fi
else
	token_note="admin token: the WAITROOM_ADMIN_TOKEN you set"
fi

# pick_images chooses (building if need be) the images compose starts; the
# service image is compiled on the host, so that compose never builds it
# (its Dockerfile needs the golang base image).
pick_images() {
	WAITROOM_REDIS_IMAGE=$(scripts/redis-image.sh redis)
	WAITROOM_LB_IMAGE=$(scripts/redis-image.sh nginx)
	export WAITROOM_REDIS_IMAGE WAITROOM_LB_IMAGE
	if [ "$WAITROOM_IMAGE" = waitroom/waitroom:local ]; then
		scripts/build-images.sh app
	fi
}

if [ "$#" -gt 0 ]; then
	# Only commands that start containers need the images; ps, logs, down
	# and the rest run at once.
	case "$1" in
	up | create | run) pick_images ;;
	esac
	exec "${compose[@]}" "$@"
fi

pick_images
"${compose[@]}" up -d --no-build

port=${WAITROOM_PORT:-8080}
echo "waiting for http://localhost:$port/readyz ..."
for _ in $(seq 60); do
	if curl -fsS "http://localhost:$port/readyz" >/dev/null 2>&1; then
		echo "waitroom is ready: $("${compose[@]}" ps -q waitroom | wc -l) replicas behind the load balancer."
		echo "Open http://localhost:$port/ : the demo order page, through the waiting room."
		echo "  waiting page: http://localhost:$port/q/default   back office: http://localhost:$port/admin"
		echo "  $token_note"
		echo "logs: scripts/up.sh logs -f    stop: scripts/up.sh down    wipe data: scripts/up.sh down -v"
		exit 0
	fi
	sleep 1
done
echo "waitroom did not become ready in 60s; $token_note; recent logs:" >&2
"${compose[@]}" logs --tail 50 >&2
exit 1

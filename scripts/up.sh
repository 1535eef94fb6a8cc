#!/usr/bin/env bash
# Run waitroom with Redis locally: the one command.
#
#   scripts/up.sh            build local images, start Redis, waitroom in gate
#                            mode and the demo order page behind it, detached;
#                            wait for /readyz
#   scripts/up.sh logs -f    any other arguments go to docker compose as-is
#                            (ps, logs, down, down -v, ...)
#
# Redis is the public redis:7-alpine where it can be pulled, else an image
# built from this host's redis-server (scripts/redis-image.sh). The service
# image is compiled on the host (scripts/build-images.sh app), so no golang
# base image is needed. Set WAITROOM_REDIS_IMAGE / WAITROOM_IMAGE to run
# other images; with registry access, `docker compose up --build` works too.
#
# Other knobs: WAITROOM_PORT (host port, 8080), WAITROOM_ADMIN_TOKEN
# (change-me), COMPOSE_PROJECT_NAME (waitroom).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

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

if [ "$#" -gt 0 ]; then
	exec "${compose[@]}" "$@"
fi

WAITROOM_REDIS_IMAGE=$(scripts/redis-image.sh)
export WAITROOM_REDIS_IMAGE
if [ "$WAITROOM_IMAGE" = waitroom/waitroom:local ]; then
	scripts/build-images.sh app
fi

# --no-build: the app image was just built on the host; compose's own build
# would need the golang base image.
"${compose[@]}" up -d --no-build

port=${WAITROOM_PORT:-8080}
echo "waiting for http://localhost:$port/readyz ..."
for _ in $(seq 60); do
	if curl -fsS "http://localhost:$port/readyz" >/dev/null 2>&1; then
		echo "waitroom is ready. Open http://localhost:$port/ : the demo order page, through the waiting room."
		echo "  waiting page: http://localhost:$port/q/default   back office: http://localhost:$port/admin"
		echo "logs: scripts/up.sh logs -f    stop: scripts/up.sh down    wipe data: scripts/up.sh down -v"
		exit 0
	fi
	sleep 1
done
echo "waitroom did not become ready in 60s; recent logs:" >&2
"${compose[@]}" logs --tail 50 >&2
exit 1

#!/usr/bin/env bash
# Print the Redis image to run: $WAITROOM_REDIS_IMAGE if set, else the
# public redis:7-alpine when it is present or can be pulled, else the local
# waitroom/redis:local, built from this host's redis-server (offline
# machines such as our CI). Build output goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

public=redis:7-alpine
if [ -n "${WAITROOM_REDIS_IMAGE:-}" ]; then
	echo "$WAITROOM_REDIS_IMAGE"
elif docker image inspect "$public" >/dev/null 2>&1 || docker pull -q "$public" >/dev/null 2>&1; then
	echo "$public"
else
	echo "$public cannot be pulled; using waitroom/redis:local" >&2
	scripts/build-images.sh redis >&2
	echo waitroom/redis:local
fi

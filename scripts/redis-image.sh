#!/usr/bin/env bash
# Print the image to run for a service that has a public image and a local
# stand-in, building the stand-in when the public image cannot be had:
#
#   scripts/redis-image.sh [redis]   $WAITROOM_REDIS_IMAGE if set, else
#                                    redis:7-alpine, else waitroom/redis:local
#   scripts/redis-image.sh nginx     $WAITROOM_LB_IMAGE if set, else
#                                    nginx:1.27-alpine, else waitroom/nginx:local
#
# The public image is taken when it is present or can be pulled; the local
# one (scripts/build-images.sh, from this host's binaries) on offline
# machines such as our CI. Only the image's name goes to stdout; a line on
# stderr says which local image stands in and what is in it.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-redis}" in
redis) set -- "${WAITROOM_REDIS_IMAGE:-}" redis:7-alpine redis ;;
nginx) set -- "${WAITROOM_LB_IMAGE:-}" nginx:1.27-alpine nginx ;;
*)
	echo "usage: $0 [redis|nginx]" >&2
	exit 2
	;;
esac
chosen=$1 public=$2 local=$3

if [ -n "$chosen" ]; then
	echo "$chosen"
elif docker image inspect "$public" >/dev/null 2>&1 || docker pull -q "$public" >/dev/null 2>&1; then
	echo "$public"
else
	built=$(scripts/build-images.sh "$local")
	echo "$built, in place of $public (cannot be pulled)" >&2
	echo "waitroom/$local:local"
fi

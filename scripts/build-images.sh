#!/usr/bin/env bash
# Build waitroom's local Docker images without pulling anything from a registry.
#
#   scripts/build-images.sh [--force] [redis|nginx|app|all]    (default: all)
#
#   waitroom/redis:local     redis-server + redis-cli copied from this host
#                            (with their shared libraries) into a FROM scratch
#                            image; for tests and docker-compose where
#                            redis:7-alpine cannot be pulled.
#   waitroom/nginx:local     this host's nginx (scripts/install-tools.sh
#                            installs it) the same way: docker-compose's load
#                            balancer where nginx:1.27-alpine cannot be pulled.
#   waitroom/waitroom:local  ./cmd/waitroom and ./cmd/demo-order built on the
#                            host (static, CGO off) and wrapped by
#                            scripts/Dockerfile.local.
#
# The redis and nginx images are skipped when an image built from the same
# files already exists (fingerprint label), unless --force. The app image is
# rebuilt every time; Docker's layer cache makes that cheap when the binary
# did not change. Machines with registry access can use the multi-stage
# ./Dockerfile and the public images instead.
#
# Each image gets one line on stdout: "built <image> (<what is in it>)" or
# "<image> is up to date (...)". docker build's own output (the legacy
# builder's deprecation banner, on hosts without BuildKit) is shown only
# when a build fails.
set -euo pipefail

REDIS_IMAGE=waitroom/redis:local
NGINX_IMAGE=waitroom/nginx:local
APP_IMAGE=waitroom/waitroom:local
# Bump when the image layout below changes, so existing images get rebuilt.
REDIS_RECIPE=1
NGINX_RECIPE=1
REDIS_UID=999
# The official nginx image's nginx user: docker-compose.yml runs either image as it.
NGINX_UID=101

root=$(cd "$(dirname "$0")/.." && pwd)

force=0
what=all
for arg in "$@"; do
	case "$arg" in
	--force) force=1 ;;
	redis | nginx | app | all) what=$arg ;;
	-h | --help)
		sed -n '2,26p' "$0"
		exit 0
		;;
	*)
		echo "usage: $0 [--force] [redis|nginx|app|all]" >&2
		exit 2
		;;
	esac
done

# Without the buildx plugin, DOCKER_BUILDKIT=1 (set by some CI setups) makes
# `docker build` fail; the classic builder handles these FROM scratch images.
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0
fi

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

# build <image> <docker build arguments>...: docker build -t <image>,
# quietly. Its output is kept and shown only if the build fails: on success
# it is the image id and, with the classic builder, a deprecation banner,
# neither of use here.
build() {
	local image=$1
	shift
	if ! docker build -q -t "$image" "$@" >"$workdir/build.log" 2>&1; then
		echo "building $image failed; docker build said:" >&2
		cat "$workdir/build.log" >&2
		return 1
	fi
}

install_redis() {
	local sudo=
	if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
	echo "redis-server not found; installing it with apt" >&2
	# Only refresh apt lists when the plain install fails: it is the slow part.
	if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; then
		$sudo apt-get update -qq
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
	fi
}

# image_current <image> <fingerprint>: whether <image> was built from
# exactly these files (and --force was not given).
image_current() {
	local current
	current=$(docker image inspect -f '{{index .Config.Labels "org.waitroom.fingerprint"}}' "$1" 2>/dev/null || true)
	[ "$force" = 0 ] && [ "$current" = "$2" ]
}

# fingerprint <ctx>: a hash of every file under <ctx>/rootfs, the Dockerfile
# and <recipe>: a changed binary, a library upgrade or a new layout all
# force a rebuild.
fingerprint() {
	(cd "$1" && find rootfs -type f -print0 | sort -z | xargs -0 sha256sum && cat Dockerfile && echo "recipe=$2") |
		sha256sum | cut -d' ' -f1
}

# copy_libs <rootfs> <elf>...: the shared libraries and dynamic loader the
# programs need, each at the path ldd reports: that is where the loader looks.
copy_libs() {
	local rootfs=$1 f
	shift
	for f in $(for elf in "$@"; do libs_of "$elf"; done | sort -u); do
		mkdir -p "$rootfs$(dirname "$f")"
		cp -L "$f" "$rootfs$f"
	done
}

# libs_of <elf>: the shared libraries and dynamic loader <elf> needs, one path a line.
libs_of() {
	ldd "$1" | awk '
		$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }'
}

build_redis() {
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		install_redis
	fi

	local server cli
	# Debian ships redis-server as a symlink; copy the real file.
	server=$(readlink -f "$(command -v redis-server)")
	cli=$(readlink -f "$(command -v redis-cli)")

	local ctx=$workdir/redis rootfs=$workdir/redis/rootfs
	mkdir -p "$rootfs/usr/bin" "$rootfs/etc" "$rootfs/tmp" "$ctx/data"
	chmod 1777 "$rootfs/tmp"
	cp "$server" "$rootfs/usr/bin/redis-server"
	cp "$cli" "$rootfs/usr/bin/redis-cli"
	copy_libs "$rootfs" "$server" "$cli"
	# redis-server only needs the user for log output; nothing reads nsswitch.
	printf 'root:x:0:0:root:/root:/sbin/nologin\nredis:x:%s:%s:redis:/data:/sbin/nologin\n' \
		"$REDIS_UID" "$REDIS_UID" >"$rootfs/etc/passwd"
	printf 'root:x:0:\nredis:x:%s:\n' "$REDIS_UID" >"$rootfs/etc/group"

	# No VOLUME line: it would leave an anonymous volume behind every test
	# container. docker-compose mounts a named volume on /data instead, and a
	# new named volume copies the redis-owned /data from the image.
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=$REDIS_UID:$REDIS_UID data/ /data/
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /data
USER $REDIS_UID:$REDIS_UID
EXPOSE 6379
# Throwaway defaults for tests: reachable from the host, no persistence.
# docker-compose overrides the command to turn on AOF.
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
DOCKERFILE

	local server_sum version fp
	# Ask through the redis-server name: the real file's name picks another
	# mode (Debian's redis-server is a link to redis-check-rdb).
	version=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	server_sum=$(sha256sum "$server" | cut -d' ' -f1)
	fp=$(fingerprint "$ctx" "$REDIS_RECIPE")
	if image_current "$REDIS_IMAGE" "$fp"; then
		echo "$REDIS_IMAGE is up to date (redis-server $version)"
		return
	fi

	build "$REDIS_IMAGE" \
		--label "org.waitroom.fingerprint=$fp" \
		--label "org.waitroom.redis-server.sha256=$server_sum" \
		--label "org.waitroom.redis-server.version=$version" \
		"$ctx"
	echo "built $REDIS_IMAGE (redis-server $version)"
}

build_nginx() {
	local nginx
	nginx=$(command -v nginx 2>/dev/null || true)
	if [ -z "$nginx" ] && [ -x /usr/sbin/nginx ]; then nginx=/usr/sbin/nginx; fi
	if [ -z "$nginx" ]; then
		"$root/scripts/install-tools.sh" nginx >&2
		nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
	fi
	nginx=$(readlink -f "$nginx")

	local ctx=$workdir/nginx rootfs=$workdir/nginx/rootfs
	mkdir -p "$rootfs/usr/sbin" "$rootfs/etc/nginx" "$rootfs/tmp" \
		"$ctx/owned/var/lib/nginx" "$ctx/owned/var/log/nginx"
	chmod 1777 "$rootfs/tmp"
	cp "$nginx" "$rootfs/usr/sbin/nginx"
	copy_libs "$rootfs" "$nginx"
	# Run as root, nginx would switch its workers to this user; run as it
	# (docker-compose.yml does), nothing reads these files.
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnginx:x:%s:%s:nginx:/nonexistent:/sbin/nologin\n' \
		"$NGINX_UID" "$NGINX_UID" >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnginx:x:%s:\n' "$NGINX_UID" >"$rootfs/etc/group"

	# No config of its own: docker-compose.yml mounts deploy/lb/nginx.conf,
	# which keeps every file nginx writes under /tmp, the same in this image
	# and the official one. The Debian build's default paths (/var/lib/nginx,
	# /var/log/nginx) exist, owned by the nginx user, for other configs.
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=$NGINX_UID:$NGINX_UID owned/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER $NGINX_UID:$NGINX_UID
EXPOSE 8080
STOPSIGNAL SIGQUIT
CMD ["nginx", "-c", "/etc/waitroom-lb/nginx.conf"]
DOCKERFILE

	local version fp
	version=$("$nginx" -v 2>&1 | sed -n 's|.*nginx/\([^ ]*\).*|\1|p')
	fp=$(fingerprint "$ctx" "$NGINX_RECIPE")
	if image_current "$NGINX_IMAGE" "$fp"; then
		echo "$NGINX_IMAGE is up to date (nginx $version)"
		return
	fi
	build "$NGINX_IMAGE" \
		--label "org.waitroom.fingerprint=$fp" \
		--label "org.waitroom.nginx.version=$version" \
		"$ctx"
	echo "built $NGINX_IMAGE (nginx $version)"
}

build_app() {
	local ctx=$workdir/app
	mkdir -p "$ctx"
	# golang base images cannot be pulled everywhere, so compile on the host,
	# always for Linux on the Docker engine's architecture: on a Mac the
	# host's own GOOS would put a macOS binary into a Linux image.
	local arch
	arch=$(docker version --format '{{.Server.Arch}}' 2>/dev/null || true)
	# The version `waitroom version`, /healthz and the labels say: the tag
	# (v0.9.0), or where the checkout is past one (v0.9.0-3-gb2d982b-dirty).
	local version revision
	version=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)
	revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
	(cd "$root" && GOOS=linux GOARCH="${arch:-$(go env GOARCH)}" CGO_ENABLED=0 go build -trimpath \
		-ldflags="-s -w -X github.com/waitroom/waitroom/internal/infra/version.version=$version" \
		-o "$ctx/" ./cmd/waitroom ./cmd/demo-order)
	# CA roots for TLS to Redis (rediss://) or other HTTPS endpoints.
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
	else
		echo "warning: no /etc/ssl/certs/ca-certificates.crt on this host; image gets no CA roots" >&2
		: >"$ctx/ca-certificates.crt"
	fi
	cp "$root/scripts/Dockerfile.local" "$ctx/Dockerfile"
	build "$APP_IMAGE" \
		--label "org.opencontainers.image.version=$version" \
		--label "org.opencontainers.image.revision=$revision" \
		"$ctx"
	echo "built $APP_IMAGE (waitroom and demo-order, $version, $(go env GOVERSION))"
}

case "$what" in
redis) build_redis ;;
nginx) build_nginx ;;
app) build_app ;;
all)
	build_redis
	build_nginx
	build_app
	;;
esac

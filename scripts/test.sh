#!/usr/bin/env bash
# The test command: vet, format check and every Go test with the race
# detector, against a real Redis in a container (and headless Chromium for
# the page tests). Installs what it needs first.
#
#   scripts/test.sh [extra go test flags, e.g. -run TestReference]
#
# Every suite runs even when one before it failed (the service's module,
# the lab's, the chart's): a failure in one must not hide another's. The
# script lists what failed at the end and exits non-zero if anything did.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=()
# step runs a command in a subshell (a cd stays in it) and goes on when
# it fails, remembering the failure under the step's name.
step() {
	local name=$1 start=$SECONDS
	shift
	if ! ("$@"); then
		echo "test.sh: FAILED: $name" >&2
		failed+=("$name")
	fi
	echo "test.sh: $name: $((SECONDS - start)) s" >&2
}
# within runs a command in a directory (step's subshell keeps the cd).
within() {
	cd "$1" || return
	shift
	"$@"
}

scripts/install-tools.sh test

# Tests start Redis with testcontainers, from the public image where it can
# be pulled, else from one built from this host's redis-server.
WAITROOM_TEST_REDIS_IMAGE=$(WAITROOM_REDIS_IMAGE="${WAITROOM_TEST_REDIS_IMAGE:-}" scripts/redis-image.sh)
export WAITROOM_TEST_REDIS_IMAGE
if [ "$WAITROOM_TEST_REDIS_IMAGE" = waitroom/redis:local ]; then
	# The reaper's image cannot be pulled here either. Without it, every
	# test package removes its own containers (redistest.Main, CleanupContainer).
	export TESTCONTAINERS_RYUK_DISABLED=true
fi
# Inside a container testcontainers takes the default gateway for the
# Docker host; with a local socket the mapped ports are on localhost.
case "${DOCKER_HOST:-unix://}" in
unix://*) export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-localhost}" ;;
esac

gofmt_check() {
	local unformatted
	unformatted=$(gofmt -l cmd internal web gate api scripts lab deploy/helm/charttest)
	if [ -n "$unformatted" ]; then
		echo "test.sh: gofmt would change:" >&2
		echo "$unformatted" >&2
		return 1
	fi
}
step "gofmt" gofmt_check
# -race for vet too: vet then compiles every package just as go test -race
# does, and go test reuses those builds instead of compiling it all a
# second time without the race detector (a third less CPU from a cold
# cache; docs/PERFORMANCE.md, "Cold start").
step "go vet (service)" go vet -race ./...
step "go test (service)" go test -race -count=1 -timeout 30m "$@" ./...
# The lab (benchmark and experiment tools) is a module of its own, so the
# service's go.mod lists only what the service and its tests need.
step "go vet (lab)" within lab go vet -race ./...
step "go test (lab)" within lab go test -race -count=1 -timeout 10m "$@" ./...
# So are the Helm chart's tests, which need the Kubernetes API packages.
step "go vet (chart)" within deploy/helm/charttest go vet ./...
step "go test (chart)" within deploy/helm/charttest go test -count=1 "$@" ./...

if [ ${#failed[@]} -gt 0 ]; then
	echo "test.sh: ${#failed[@]} step(s) failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "test.sh: every suite passed"

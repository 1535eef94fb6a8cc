#!/usr/bin/env bash
# Install the tools that waitroom's tests and benchmarks need, skipping what is
# already present, so CI can call it unconditionally.
#
#   scripts/install-tools.sh [test|bench|all]    (default: all)
#     test  -> redis-server, redis-cli, chromium, a Korean font (integration + browser tests)
#     bench -> wrk, k6                              (load tests)
#
# Debian/Ubuntu only (apt). k6 is built from source with `go install` because
# it is not packaged by Debian; that takes about two minutes the first time.
set -euo pipefail

K6_VERSION=v1.8.1

mode=${1:-all}
case "$mode" in
test | bench | all) ;;
-h | --help)
	sed -n '2,10p' "$0"
	exit 0
	;;
*)
	echo "usage: $0 [test|bench|all]" >&2
	exit 2
	;;
esac

# apt needs root; CI runners usually have passwordless sudo instead.
sudo=
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi

done_list=()
present_list=()

have() { command -v "$1" >/dev/null 2>&1; }

# Collect missing Debian packages first so apt-get update runs at most once.
missing_pkgs=()
need_pkg() { # need_pkg <package> <command>...: queue <package> unless one of the commands exists
	local pkg=$1 cmd
	shift
	for cmd in "$@"; do
		if have "$cmd"; then
			present_list+=("$pkg ($(command -v "$cmd"))")
			return
		fi
	done
	missing_pkgs+=("$pkg")
}

if [ "$mode" = test ] || [ "$mode" = all ]; then
	need_pkg redis-server redis-server
	need_pkg redis-tools redis-cli
	# chromedp finds any of these; a preinstalled Chrome is as good as chromium.
	need_pkg chromium chromium chromium-browser google-chrome google-chrome-stable
	# A Hangul font, so the Korean waiting page renders in screenshots.
	if dpkg -s fonts-nanum >/dev/null 2>&1 || fc-list :lang=ko 2>/dev/null | grep -q .; then
		present_list+=("Korean font")
	else
		missing_pkgs+=(fonts-nanum)
	fi
fi
if [ "$mode" = bench ] || [ "$mode" = all ]; then
	need_pkg wrk wrk
fi

if [ "${#missing_pkgs[@]}" -gt 0 ]; then
	# Fresh CI images often ship without apt lists, so refresh once before installing.
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}"
	done_list+=("apt: ${missing_pkgs[*]}")
fi

if [ "$mode" = bench ] || [ "$mode" = all ]; then
	have go || {
		echo "go is required to build k6" >&2
		exit 1
	}
	gobin="$(go env GOPATH)/bin"
	k6=
	if have k6; then
		k6=$(command -v k6)
	elif [ -x "$gobin/k6" ]; then
		k6=$gobin/k6
	fi
	if [ -n "$k6" ] && "$k6" version 2>/dev/null | grep -q "k6 $K6_VERSION\b"; then
		present_list+=("k6 $K6_VERSION ($k6)")
	else
		if [ -n "$k6" ]; then
			echo "found $("$k6" version 2>/dev/null | head -n1) at $k6; installing pinned $K6_VERSION" >&2
		fi
		echo "building k6 $K6_VERSION (about two minutes)..." >&2
		GOBIN=$gobin CGO_ENABLED=0 go install "go.k6.io/k6@$K6_VERSION"
		done_list+=("k6 $K6_VERSION -> $gobin/k6")
	fi
	case ":$PATH:" in
	*":$gobin:"*) ;;
	*) echo "note: add $gobin to PATH to run k6" >&2 ;;
	esac
fi

for item in "${present_list[@]}"; do echo "present:   $item"; done
for item in "${done_list[@]}"; do echo "installed: $item"; done

#!/usr/bin/env bash
# Install the tools that waitroom's tests and benchmarks need, skipping what is
# already present, so CI can call it unconditionally.
#
#   scripts/install-tools.sh [test|bench|nginx|all]    (default: all)
#     test  -> redis-server, redis-cli, jq, python3, PyJWT (python3-jwt,
#              python3-cryptography), nodejs, chromium, a Korean font, nginx,
#              helm (integration, browser, nginx forward-auth, webhook
#              receiver and pass verification examples' tests; the Helm
#              chart's tests in deploy/helm/charttest)
#     bench -> wrk, k6, nginx                       (load tests, scripts/bench-gate.sh)
#     nginx -> nginx only (scripts/build-images.sh nginx)
#
# Debian/Ubuntu only (apt). k6 and helm, at pinned versions, are built from
# source with `go install` (k6 is not packaged by Debian); that takes about
# two minutes for k6 and one for helm the first time.
# nginx (Debian's nginx-light, else nginx) is installed without starting the
# system's nginx on port 80: the tests and benchmarks run their own.
# The README's Prerequisites is the one list of these, with what the
# machine must have already (Go, Docker, bash, curl); keep the two alike.
set -euo pipefail

K6_VERSION=v1.8.1
HELM_VERSION=v3.22.0

mode=${1:-all}
case "$mode" in
test | bench | nginx | all) ;;
-h | --help)
	sed -n '2,18p' "$0"
	exit 0
	;;
*)
	echo "usage: $0 [test|bench|nginx|all]" >&2
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
	# docs/API.md's curl examples read answers with jq (TestAPIExamples).
	need_pkg jq jq
	# docs/WEBHOOKS.md's Python webhook receiver runs in TestReceiversGenerated.
	need_pkg python3 python3
	# docs/examples/verify's Python example (TestVerifyExamples) verifies
	# passes with PyJWT, which needs cryptography for EdDSA. Debian's
	# packages go to /usr/bin/python3, which the test also looks at.
	if python3 -c 'import jwt, cryptography' 2>/dev/null || /usr/bin/python3 -c 'import jwt, cryptography' 2>/dev/null; then
		present_list+=("PyJWT")
	else
		missing_pkgs+=(python3-jwt python3-cryptography)
	fi
	# ...and its Node example, with Node's own crypto (no packages).
	need_pkg nodejs node nodejs
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

# nginx, for every mode: internal/testkit/e2e/nginx_test.go and scripts/bench-gate.sh
# run it. Debian installs it as /usr/sbin/nginx, which is not on a non-root
# PATH; both look there too.
nginx_bin() {
	if have nginx; then
		command -v nginx
	elif [ -x /usr/sbin/nginx ]; then
		echo /usr/sbin/nginx
	else
		return 1
	fi
}
need_nginx=
if nginx="$(nginx_bin)"; then
	present_list+=("nginx ($nginx)")
else
	need_nginx=1
fi

apt_install() {
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

if [ "${#missing_pkgs[@]}" -gt 0 ] || [ -n "$need_nginx" ]; then
	# Fresh CI images often ship without apt lists, so refresh once before installing.
	$sudo apt-get update -qq
fi
if [ "${#missing_pkgs[@]}" -gt 0 ]; then
	apt_install "${missing_pkgs[@]}"
	done_list+=("apt: ${missing_pkgs[*]}")
fi

if [ -n "$need_nginx" ]; then
	# nginx-light (Debian 12: a transitional package for nginx, with the
	# auth_request module that deploy/nginx/waitroom.conf needs), where the
	# distribution still has it.
	pkg=nginx-light
	case "$(apt-cache policy nginx-light 2>/dev/null || true)" in
	*"Candidate: "[0-9]*) ;;
	*) pkg=nginx ;;
	esac
	# The package starts the system's nginx on port 80 (invoke-rc.d, or
	# deb-systemd-invoke under systemd). A policy-rc.d that answers 101
	# ("action forbidden") stops that; it is removed again at once, unless
	# one was there before (Debian's container images ship one).
	policy=/usr/sbin/policy-rc.d
	added_policy=
	if [ ! -e "$policy" ]; then
		trap '[ -z "$added_policy" ] || $sudo rm -f "$policy"' EXIT
		$sudo sh -c "printf '#!/bin/sh\\n# install-tools.sh: no daemon starts while nginx installs\\nexit 101\\n' >$policy && chmod 755 $policy"
		added_policy=1
	fi
	running_before=" $(pgrep -x nginx | tr '\n' ' ' || true) "
	apt_install "$pkg"
	if [ -n "$added_policy" ]; then
		$sudo rm -f "$policy"
		added_policy=
	fi
	# Should a daemon have started all the same (a policy-rc.d of the image
	# that allows it), stop it: nothing here wants it. Only that one: other
	# nginx processes (a benchmark's, a test's) are left alone.
	if pid=$(cat /run/nginx.pid 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
		[ "${running_before#* "$pid" }" = "$running_before" ]; then
		echo "stopping the nginx daemon (pid $pid) the package started" >&2
		if [ -d /run/systemd/system ]; then
			$sudo systemctl stop nginx || $sudo kill -QUIT "$pid"
		else
			$sudo kill -QUIT "$pid"
		fi
		for _ in $(seq 50); do
			grep -qs '^State:[[:space:]]*[^Z]' "/proc/$pid/status" || break # gone, or a zombie
			sleep 0.1
		done
	fi
	nginx="$(nginx_bin)" || {
		echo "apt installed $pkg but no nginx binary was found" >&2
		exit 1
	}
	done_list+=("apt: $pkg ($nginx)")
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

if [ "$mode" = test ] || [ "$mode" = all ]; then
	have go || {
		echo "go is required to build helm" >&2
		exit 1
	}
	gobin="$(go env GOPATH)/bin"
	helm=
	if have helm; then
		helm=$(command -v helm)
	elif [ -x "$gobin/helm" ]; then
		helm=$gobin/helm
	fi
	# A release binary reports its full version; one built by go install
	# reports only v3.N, so its module version is read from the binary.
	helm_version() {
		"$1" version --template '{{.Version}}' 2>/dev/null || true
		echo
		go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "helm.sh/helm/v3" { print $3 }'
	}
	if [ -n "$helm" ] && helm_version "$helm" | grep -qx "$HELM_VERSION"; then
		present_list+=("helm $HELM_VERSION ($helm)")
	else
		if [ -n "$helm" ]; then
			echo "found helm $(helm_version "$helm" | head -n1) at $helm; installing pinned $HELM_VERSION" >&2
		fi
		echo "building helm $HELM_VERSION (about a minute)..." >&2
		GOBIN=$gobin CGO_ENABLED=0 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
		done_list+=("helm $HELM_VERSION -> $gobin/helm")
	fi
fi

for item in "${present_list[@]}"; do echo "present:   $item"; done
for item in "${done_list[@]}"; do echo "installed: $item"; done

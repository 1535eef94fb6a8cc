#!/usr/bin/env bash
# test-under-load.sh: the whole suite RUNS times in a row (default 5) on a
# fresh clone of REV (default HEAD), while a parallel build keeps the
# machine's cores busy (`go build -a ./cmd/waitroom` in a loop, from a
# second clone, with a build cache of its own). Each run is `.ci/run`, the
# README's test command. A suite that passes only on an idle machine
# fails a newcomer whose laptop is doing other work.
#
#   scripts/test-under-load.sh [REV] [RUNS]
#
# Work and logs go to WORK (default: a new temp dir); it prints one line
# per run (exit status, seconds, load average) and exits non-zero if any
# run failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
runs=${2:-5}
work=${WORK:-$(mktemp -d)}
rev=$(git -C "$root" rev-parse "$rev") || exit 2
git clone -q "$root" "$work/repo" && git -C "$work/repo" checkout -q "$rev" || exit 2
git clone -q "$root" "$work/hog" && git -C "$work/hog" checkout -q "$rev" || exit 2
(cd "$work/hog" && while :; do GOCACHE="$work/hogcache" go build -a -o /dev/null ./cmd/waitroom >/dev/null 2>&1; done) &
hog=$!
trap 'kill "$hog" 2>/dev/null' EXIT # the build in progress ends by itself
failed=0
for i in $(seq "$runs"); do
	start=$(date +%s)
	(cd "$work/repo" && CI=true bash .ci/run) >"$work/run$i.log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
	echo "run $i of $runs: exit $rc, $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg), log $work/run$i.log"
done
echo "$((runs - failed)) of $runs passed at $rev"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# snapload.sh: what many replicas' snapshot reads cost one queue's Redis
# (docs/SCALE.md). A private redis-server (lib.sh) gets a line of
# LINE places written directly, then lab/cmd/wr-snapload runs REPLICAS stores,
# each reading the queue's snapshot (queue.Store.RefreshSnapshot, force)
# once a second, their seconds spread evenly, for DURATION, and reports
# redis-server's CPU over the run as a share of one core. Target: under
# 5 % of a core for 50 replicas against a line of a million.
#
#   scripts/snapload.sh                      # 50 replicas, 1 M places, 60 s
#   TICK=1 scripts/snapload.sh               # each also calls the tick first
#
# Env: REPLICAS (50), LINE (1000000), DURATION (60s), TICK (0), plus WR_PIN,
# WR_REDIS_CPUS, WR_LOAD_CPUS, WR_KEEP (lib.sh). Exits 2 when the target
# was missed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPLICAS=${REPLICAS:-50}
LINE=${LINE:-1000000}
DURATION=${DURATION:-60s}
TICK=${TICK:-0}

wr_init
wr_log "building lab/cmd/wr-snapload"
(cd "$WR_ROOT/lab" && go build -o "$WR_TMP/wr-snapload" ./cmd/wr-snapload) || wr_die "go build failed"
wr_start_redis
tick=false
[[ $TICK == 1 ]] && tick=true
"${WR_PIN_LOAD[@]}" "$WR_TMP/wr-snapload" -redis-addr "127.0.0.1:$WR_REDIS_PORT" -redis-pid "$WR_REDIS_PID" \
	-replicas "$REPLICAS" -line "$LINE" -duration "$DURATION" -tick="$tick" -clk-tck "$(getconf CLK_TCK)"

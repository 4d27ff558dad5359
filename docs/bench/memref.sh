#!/bin/bash
# The memory store's bounds and fair reads for one reqlogd binary, as
# docs/benchmarks.md ("Memory store") measured them:
#   docs/bench/memref.sh bin/reqlogd new 18311
# Ingest against the plain decode on a fresh server; then a fresh server seeded
# with 1,000,000 messages for account heavy and 10,000 for bench, the statistics
# over 24 h one request at a time, and the fair workload with an ASCII q and
# with U+FFFD. Needs bin/reqlog-bench (go build -o bin/reqlog-bench ./cmd/reqlog-bench).
set -u
BIN=$1; LABEL=$2; PORT=$3; N=${4:-1000000}
export REQLOG_STORE=memory REQLOG_ADDR=127.0.0.1:$PORT REQLOG_API_KEYS=bench:live:bench-key,heavy:live:heavy-key \
  REQLOG_RATE_LIMIT=0 REQLOG_LOG_LEVEL=warn REQLOG_PURGE_INTERVAL=1h REQLOG_VISIBILITY_DELAY=0
B="bin/reqlog-bench -url http://127.0.0.1:$PORT -wait 10s"
stamp() { echo "### $LABEL $1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"; }

stamp ingest
$BIN & pid=$!
$B -key bench-key -duration 15s -limit decode -pid $pid -label "$LABEL" ingest
kill $pid; wait $pid

stamp seed
$BIN & pid=$!
trap 'kill $pid' EXIT
$B -key heavy-key -n "$N" seed
grep -E 'VmRSS|VmHWM' /proc/$pid/status
$B -key bench-key -n 10000 -seed 3 seed
stamp stats
$B -key heavy-key -rate 1 -connections 1 -max-workers 1 -duration 10s -timeout 60s -pid $pid -label "$LABEL" stats
stamp fair
$B -key bench-key -heavy-key heavy-key -rate 50 -duration 20s -pid $pid -label "$LABEL" fair
$B -key bench-key -heavy-key heavy-key -heavy-q $'\uFFFDzz' -rate 50 -duration 20s -pid $pid -label "$LABEL" fair
grep -E 'VmRSS|VmHWM' /proc/$pid/status

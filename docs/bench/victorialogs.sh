#!/bin/bash
# reqlog's default store side by side with VictoriaLogs v1.52.1 (issue 43): the
# same generated exchanges (reqlog-bench generate) into both, in interleaved
# rounds of 8 connections posting batches of 100; prints each server's disk
# and CPU per message and their ratios (reqlog / VictoriaLogs).
#
# Usage, from the repository root: docs/bench/victorialogs.sh [messages] [rounds]
#   (default 300000 messages in 10 rounds; WORK=dir keeps the files there;
#   REQLOGD=path runs that reqlogd build instead of the working tree's)
# Builds reqlogd and reqlog-bench from the working tree and VictoriaLogs from
# the Go module proxy (github.com/VictoriaMetrics/VictoriaLogs, Apache-2.0).
# Loopback only: reqlogd on :18431, VictoriaLogs on :18432.
set -euo pipefail
N=${1:-300000}; ROUNDS=${2:-10}; SEED=${SEED:-1}; CONNS=8; BATCH=100
WORK=${WORK:-$(mktemp -d /tmp/vlbench.XXXX)}
mkdir -p "$WORK/bin" "$WORK/reqlog" "$WORK/vl" "$WORK/batches"
RQ=http://127.0.0.1:18431 VL=http://127.0.0.1:18432

go build -o "$WORK/bin/" ./cmd/reqlogd ./cmd/reqlog-bench
REQLOGD=${REQLOGD:-$WORK/bin/reqlogd}
[ -x "$WORK/bin/victoria-logs" ] ||
  GOBIN="$WORK/bin" GOFLAGS=-mod=mod go install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@v1.52.1

# The same data for both: one submission a line; a batch file per store.
"$WORK/bin/reqlog-bench" -seed "$SEED" -n "$N" generate > "$WORK/corpus.jsonl"
split -l $BATCH -d -a 6 "$WORK/corpus.jsonl" "$WORK/batches/b"
for f in "$WORK"/batches/b*; do
  { printf '['; paste -sd, "$f"; printf ']'; } > "$f.json"
done

REQLOG_ADDR=127.0.0.1:18431 REQLOG_API_KEYS=bench:live:bench-key REQLOG_RATE_LIMIT=0 \
  REQLOG_VISIBILITY_DELAY=0 REQLOG_LOG_LEVEL=warn REQLOG_PURGE_INTERVAL=1h REQLOG_GROUP_COMMIT_MAX_WAIT=0 \
  REQLOG_SQLITE_DIR="$WORK/reqlog" "$REQLOGD" > "$WORK/reqlogd.log" 2>&1 &
rpid=$!
"$WORK/bin/victoria-logs" -httpListenAddr=127.0.0.1:18432 -storageDataPath="$WORK/vl" \
  -retentionPeriod=100y -loggerLevel=WARN > "$WORK/victorialogs.log" 2>&1 &
vpid=$!
trap 'kill $rpid $vpid 2>/dev/null || true' EXIT
for i in $(seq 120); do
  curl -sf $RQ/readyz > /dev/null && curl -sf $VL/health > /dev/null && break
  sleep 0.5
done

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; } # user + system, in clock ticks
HZ=$(getconf CLK_TCK)
# A batch refused (429, 503: the machine too busy) is sent again, up to ten times;
# a batch still refused stops the run (xargs exits 123).
post_reqlog() {
  xargs -P $CONNS -I{} curl -sSf --retry 10 -o /dev/null -X POST -H 'Authorization: Bearer bench-key' \
    -H 'Content-Type: application/json' --data-binary @{}.json $RQ/v1/messages
}
post_vl() {
  xargs -P $CONNS -I{} curl -sSf --retry 10 -o /dev/null -X POST -H 'Content-Type: application/stream+json' \
    --data-binary @{} "$VL/insert/jsonline?_stream_fields=name&_time_field=created_at&_msg_field=path"
}
# Interleaved rounds: each store gets every ROUNDS-th batch in turn, so that the
# machine's load falls on both alike. Only the servers' own CPU is counted.
ls "$WORK"/batches/b* | grep -v '\.json$' > "$WORK/all"
rcpu=0 vcpu=0 rwall=0 vwall=0
for r in $(seq 0 $((ROUNDS - 1))); do
  awk -v r=$r -v n=$ROUNDS 'NR % n == r' "$WORK/all" > "$WORK/round"
  for store in reqlog vl; do
    pid=$rpid; [ $store = vl ] && pid=$vpid
    c0=$(ticks $pid); t0=$(date +%s%N)
    "post_$store" < "$WORK/round"
    c1=$(ticks $pid); t1=$(date +%s%N)
    if [ $store = reqlog ]; then rcpu=$((rcpu + c1 - c0)); rwall=$((rwall + t1 - t0))
    else vcpu=$((vcpu + c1 - c0)); vwall=$((vwall + t1 - t0)); fi
  done
done

# Both hold every message: count them.
from=$(date -u -d '-3 days' +%Y-%m-%dT%H:%M:%SZ) to=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
rcount=$(curl -sf -H 'Authorization: Bearer bench-key' "$RQ/v1/stats?from=$from&to=$to&interval=1d" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["total"]["count"])')
curl -sf "$VL/internal/force_flush" > /dev/null
vcount=$(curl -sf "$VL/select/logsql/query" --data-urlencode "query=* | stats count() n" |
  python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["n"])')

# Disk after merges: VictoriaLogs merges its parts in the background once
# forced, until its directory stops changing; reqlogd checkpoints its WAL
# into the day files when it stops.
curl -sf "$VL/internal/force_merge" > /dev/null || true
last=0
for i in $(seq 60); do
  sleep 5; now=$(du -sB1 "$WORK/vl" | cut -f1)
  [ "$now" = "$last" ] && break
  last=$now
done
kill $rpid; wait $rpid || true
vdisk=$(du -sB1 "$WORK/vl" | cut -f1) rdisk=$(du -sB1 "$WORK/reqlog" | cut -f1)

python3 - "$N" "$rcount" "$vcount" "$rdisk" "$vdisk" "$rcpu" "$vcpu" "$HZ" "$rwall" "$vwall" <<'EOF'
import sys
n, rc, vc, rd, vd, rcpu, vcpu, hz, rw, vw = (int(x) for x in sys.argv[1:])
print(f"{n} messages generated; stored: reqlog {rc}, VictoriaLogs {vc}")
rows = [("disk per message (B)", rd / n, vd / n),
        ("server CPU per message at ingest (µs)", rcpu / hz / n * 1e6, vcpu / hz / n * 1e6),
        ("messages/s at ingest", n / (rw / 1e9), n / (vw / 1e9))]
print(f"{'figure':40} {'reqlog':>10} {'VictoriaLogs':>13} {'ratio':>7}")
for name, r, v in rows:
    print(f"{name:40} {r:10.1f} {v:13.1f} {r / v:7.2f}")
EOF

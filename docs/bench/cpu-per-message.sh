#!/bin/bash
# CPU per acknowledged message of reqlogd and of its store, per store, at 64 x 10 and 64 x 1.
# Usage (from the repository root, after `go build -o bin/ ./cmd/reqlogd ./cmd/reqlog-bench ./cmd/reqlog-devstore`): docs/bench/cpu-per-message.sh memory|sqlite|mongodb|elasticsearch
set -u
W=bin; store=$1; D=${D:-15s}
dir=$(mktemp -d /tmp/cpm.XXXX)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
env=(REQLOG_ADDR=127.0.0.1:18095 REQLOG_API_KEYS=bench:live:bench-key REQLOG_RATE_LIMIT=0 REQLOG_LOG_LEVEL=warn REQLOG_PURGE_INTERVAL=1h)
spid=""
case $store in
  memory) env+=(REQLOG_STORE=memory) ;;
  sqlite) env+=(REQLOG_STORE=sqlite REQLOG_SQLITE_DIR=$dir/sqlite) ;;
  mongodb) $W/reqlog-devstore -dir $dir -mongodb-addr 127.0.0.1:27095 mongodb >$dir/store.log 2>&1 & spid=$!
           env+=(REQLOG_STORE=mongodb REQLOG_MONGODB_URI=mongodb://127.0.0.1:27095/) ;;
  elasticsearch) $W/reqlog-devstore -dir $dir -elasticsearch-port 9295 elasticsearch >$dir/store.log 2>&1 & spid=$!
           env+=(REQLOG_STORE=elasticsearch REQLOG_ELASTICSEARCH_URL=http://127.0.0.1:9295) ;;
esac
if [ $store = elasticsearch ]; then
  for i in $(seq 300); do curl -sf http://127.0.0.1:9295/ >/dev/null && break; sleep 1; done
  spid=$(pgrep -f "org.elasticsearch.bootstrap.*$dir" | head -1); [ -z "$spid" ] && spid=$(pgrep -n -f org.elasticsearch.bootstrap)
fi
[ $store = mongodb ] && sleep 3
env "${env[@]}" $W/reqlogd >$dir/reqlogd.log 2>&1 & rpid=$!
for i in $(seq 300); do curl -sf http://127.0.0.1:18095/readyz >/dev/null && break; sleep 0.5; done
B="$W/reqlog-bench -url http://127.0.0.1:18095 -key bench-key"
$B -duration 10s -items 10 ingest >/dev/null 2>&1   # warm-up
for items in 10 1; do
  r0=$(cpu $rpid); s0=0; [ -n "$spid" ] && s0=$(cpu $spid)
  out=$($B -duration $D -items $items -pid $rpid -label $store ingest 2>&1)
  r1=$(cpu $rpid); s1=0; [ -n "$spid" ] && s1=$(cpu $spid)
  msgs=$(echo "$out" | awk '/messages\/s acknowledged/{print $2}')
  acked=$(echo "$out" | awk '$1=="all"{print $2}')
  echo "$store 64x$items: $msgs msg/s; $(echo "$out" | grep -i 'cpu' | head -2 | tr '\n' ' ')"
  echo "   /proc: reqlogd $(( (r1-r0)*10 )) ms, store $(( (s1-s0)*10 )) ms over the run; requests $acked"
done
kill $rpid; [ -n "$spid" ] && kill $spid; sleep 2; pkill -f "$dir" ; rm -rf $dir

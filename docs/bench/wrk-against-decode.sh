#!/bin/bash
# Issue 21's measure: wrk (2 threads, 64 connections, one 1.8 KB submission per POST)
# against the plain-decode anchor and reqlogd builds in turn, with each process's CPU
# per request from /proc/PID/stat. Usage, from the repository root after
# `go build -o bin/ ./cmd/reqlogd ./cmd/reqlog-bench`:
#   docs/bench/wrk-against-decode.sh "head||" "other|ENV=value|/path/to/other/reqlogd" ...
# each argument: label|extra environment|reqlogd binary (default bin/reqlogd).
# reqlogd runs on the memory store unless the extra environment names another.
D=${D:-15s}; ROUNDS=${ROUNDS:-3}; here=$(dirname "$0")
export BODY=$(mktemp); python3 "$here/submission-1.8kb.py" > "$BODY"
coproc CHILD { bin/reqlog-bench serve-decode; }
read -r URL <&"${CHILD[0]}"
DPID=$(pgrep -f 'reqlog-bench serve-decode' | head -1)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
one() { # label url pid
  local c0=$(cpu $3) out c1 reqs
  out=$(wrk -t2 -c64 -d$D -s "$here/post.lua" $2); c1=$(cpu $3)
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  echo "$1: $(echo "$out" | awk '/Requests\/sec/{print $2}') req/s, non-2xx $(echo "$out" | awk '/Non-2xx/{print $NF}'), cpu $(( (c1-c0)*1000000000/$(getconf CLK_TCK)/reqs ))ns/req"
}
for round in $(seq $ROUNDS); do
  one decode $URL/v1/messages $DPID
  for spec in "$@"; do
    IFS='|' read -r label envs bin <<<"$spec"
    env REQLOG_ADDR=127.0.0.1:18090 REQLOG_API_KEYS=bench:live:bench-key REQLOG_RATE_LIMIT=0 REQLOG_STORE=memory $envs ${bin:-bin/reqlogd} >/dev/null 2>&1 &
    p=$!
    for i in $(seq 50); do curl -sf http://127.0.0.1:18090/readyz >/dev/null && break; sleep 0.1; done
    one "$label" http://127.0.0.1:18090/v1/messages $p
    kill $p; wait $p 2>/dev/null
  done
done
eval "exec ${CHILD[1]}>&-"; rm -f "$BODY"

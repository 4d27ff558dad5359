#!/bin/bash
# es-stats-rounds.sh: the 24 h statistics of the scope and of one application
# against reqlogd on Elasticsearch, in rounds of 30 s at one request a second,
# with the node's and reqlogd's CPU per call (docs/benchmarks.md, "Statistics at
# a million on Elasticsearch").
#
#   ES=http://127.0.0.1:9291 URL=http://127.0.0.1:18291 KEY=bench-key \
#   NODE_PID=<the JVM's pid> REQLOGD_PID=<reqlogd's pid> B=bin/reqlog-bench \
#   docs/bench/es-stats-rounds.sh [rounds] [settle]
#
# With "settle" it first marks every minute settled now: a seed with -direct
# refreshes its indices rarely, so its marks settle long after it (an unsettled
# minute is streamed by every call, never kept).
set -euo pipefail
rounds=${1:-3}
: "${ES:?} ${URL:?} ${KEY:?} ${NODE_PID:?} ${REQLOGD_PID:?} ${B:?}"

if [ "${2:-}" = settle ]; then
	curl -sf -XPOST "$ES/reqlog-rollups-*/_refresh" >/dev/null
	ES="$ES" python3 - <<'PY'
import json, os, time, urllib.request
ES = os.environ["ES"]
def req(path, body, ndjson=False):
    data = body.encode() if ndjson else json.dumps(body).encode()
    r = urllib.request.Request(ES + path, data=data, method="POST",
        headers={"content-type": "application/x-ndjson" if ndjson else "application/json"})
    return json.load(urllib.request.urlopen(r))
now = int(time.time() * 1000)
q = {"size": 5000, "query": {"bool": {"filter": [{"term": {"kind": "mark"}}, {"range": {"settled": {"gt": now}}}]}},
     "sort": [{"minute": "asc"}, {"name": "asc"}]}
fixed = 0
while True:
    hits = req("/reqlog-rollups-*/_search", q)["hits"]["hits"]
    if not hits:
        break
    lines = []
    for h in hits:
        src = h["_source"]; src["settled"] = now
        lines += [json.dumps({"index": {"_index": h["_index"], "_id": h["_id"]}}), json.dumps(src)]
    out = req("/_bulk", "\n".join(lines) + "\n", ndjson=True)
    assert not out["errors"], out
    fixed += len(hits)
    q["search_after"] = hits[-1]["sort"]
print("marks settled now:", fixed)
PY
	curl -sf -XPOST "$ES/reqlog-rollups-*/_refresh" >/dev/null
fi

cpu() { awk '{print $14+$15}' "/proc/$1/stat"; } # clock ticks (1/100 s)
for _ in $(seq "$rounds"); do
	for q in "" "name=shop-frontend"; do
		node=$(cpu "$NODE_PID") server=$(cpu "$REQLOGD_PID") load=$(cut -d' ' -f1 /proc/loadavg)
		out=$("$B" -url "$URL" -key "$KEY" -rate 1 -duration 30s -pid "$REQLOGD_PID" -stats-query "$q" stats 2>&1)
		echo "== q='$q' load=$load..$(cut -d' ' -f1 /proc/loadavg)" \
			"node_cpu_ms_per_call=$((($(cpu "$NODE_PID") - node) * 10 / 30))" \
			"reqlogd_cpu_ms_per_call=$((($(cpu "$REQLOGD_PID") - server) * 10 / 30))"
		grep -E 'p99|stats +[0-9]|waited' <<<"$out"
	done
done

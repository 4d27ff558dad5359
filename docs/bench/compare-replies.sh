#!/bin/bash
# Runs the black-box HTTP suite (conformance.RunAPITests, on the memory store)
# against the API of two commits, records every request and reply, and diffs
# the two recordings once the values that differ from run to run (ids,
# references, times, cursors, request ids) are replaced by placeholders.
# Usage, from the repository root: docs/bench/compare-replies.sh OLD [NEW]
# (NEW defaults to the work tree). Exit status 0: the replies are identical.
set -euo pipefail
old=${1:?usage: compare-replies.sh OLD_COMMIT [NEW_COMMIT]}; new=${2:-}
work=$(mktemp -d /tmp/compare-replies-XXXXXX)
trap 'rm -rf "$work"' EXIT
git archive "$old" | (mkdir "$work/old" && tar -x -C "$work/old")
if [ -n "$new" ]; then
	git archive "$new" | (mkdir "$work/new" && tar -x -C "$work/new")
else
	mkdir "$work/new" && git ls-files -z | xargs -0 cp --parents -t "$work/new"
fi
for side in old new; do
	cat > "$work/$side/conformance/zz_record_replies_test.go" <<'EOF'
package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var recordMu sync.Mutex

// TestRecordReplies runs the HTTP suite and appends each exchange to $REPLIES.
func TestRecordReplies(t *testing.T) {
	out, err := os.Create(os.Getenv("REPLIES"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	newStore := func(context_ any, t *testing.T) {}
	_ = newStore
	serve := func(t *testing.T, store ports.MessageStore, cfg conformance.APIConfig) http.Handler {
		inner := httpapitest.Serve(t, store, cfg)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			header := func(h http.Header, names ...string) map[string][]string {
				kept := map[string][]string{}
				for _, n := range names {
					if v, ok := h[n]; ok {
						kept[n] = v
					}
				}
				return kept
			}
			line, _ := json.Marshal(map[string]any{
				"test": t.Name(), "method": r.Method, "url": r.URL.String(),
				"request_header": header(r.Header, "Content-Type", "Content-Encoding", "Idempotency-Key", "Authorization"),
				"request_body":   string(body),
				"status":         rec.Code,
				"reply_header": header(rec.Header(), "Content-Type", "Retry-After", "Allow", "Www-Authenticate",
					"Content-Disposition", "Accept-Encoding", "Connection"),
				"reply_body": rec.Body.String(),
			})
			recordMu.Lock()
			out.Write(append(line, '\n'))
			recordMu.Unlock()
		})
	}
	conformance.RunAPITests(t, func(_ context.Context, t *testing.T) (ports.MessageStore, error) {
		return memory.New(), nil
	}, serve)
	t.Run("OpenAPI", func(t *testing.T) {
		h := serve(t, memory.New(), conformance.APIConfig{Policy: domain.DefaultPolicy(), Clock: conformance.NewFakeClock(time.Now())})
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	})
}
EOF
	sed -i 's/^\t"bytes"$/\t"bytes"\n\t"context"/; /newStore := func(context_ any/d; /_ = newStore/d' "$work/$side/conformance/zz_record_replies_test.go"
	(cd "$work/$side" && REPLIES="$work/$side.jsonl" go test -count=1 -run '^TestRecordReplies$' ./conformance/ >"$work/$side.log" 2>&1) ||
		{ echo "the suite failed on $side:"; tail -30 "$work/$side.log"; exit 1; }
done
normalise() {
	python3 - "$1" <<'EOF'
import hashlib, json, re, sys, urllib.parse
subs = [
    (re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'), '<uuid>'),
    (re.compile(r'msg_[A-Za-z0-9]{12}'), '<reference>'),
    (re.compile(r'rlp_[A-Za-z0-9._-]+'), '<portal-token>'),
    (re.compile(r'127\.0\.0\.1:\d+'), '<address>'),
    (re.compile(r'\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)?'), '<time>'),
    (re.compile(r'\b\d{10,}(\.\d+)?\b'), '<number>'),
    (re.compile(r'(cursor=|"next_cursor":")[A-Za-z0-9_=%-]+'), r'\1<cursor>'),
]
def norm(s):
    for pattern, repl in subs:
        s = pattern.sub(repl, s)
    return s
lines = []
for raw in open(sys.argv[1]):
    r = json.loads(raw)
    r['url'] = urllib.parse.unquote(r['url'])
    for k in ('url', 'request_body', 'reply_body'):
        r[k] = norm(r[k])
    r['request_header'] = json.loads(norm(json.dumps(r['request_header'])))
    if len(r['request_body']) > 2000:
        r['request_body'] = 'sha256:%s (%d bytes)' % (hashlib.sha256(r['request_body'].encode()).hexdigest()[:16], len(r['request_body']))
    r['test'] = re.sub(r'#\d+$', '', r['test'])
    lines.append(json.dumps(r, sort_keys=True))
lines.sort()
print('\n'.join(lines))
EOF
}
normalise "$work/old.jsonl" > "$work/old.txt"
normalise "$work/new.jsonl" > "$work/new.txt"
echo "$(wc -l < "$work/old.txt") exchanges recorded on $old, $(wc -l < "$work/new.txt") on ${new:-the work tree}"
echo "of them GET /v1/openapi.json: $(grep -c '"url": "/v1/openapi.json"' "$work/new.txt" || true), POST /v1/messages: $(grep -c '"method": "POST", "reply_body": .*"url": "/v1/messages"' "$work/new.txt" || true), BadSubmissions: $(grep -c '"test": "TestRecordReplies/BadSubmissions' "$work/new.txt" || true)"
# Statistics buckets are aligned to the wall clock and the suite's clock starts
# at the time of the run, so two runs of one build can count a bucket apart:
# they are reported apart from the others.
python3 - "$work/old.txt" "$work/new.txt" <<'EOF'
import json, sys
def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        out.setdefault((r['test'], r['method'], r['url'], r['request_body']), []).append(line)
    return out
old, new = load(sys.argv[1]), load(sys.argv[2])
differ = [k for k in sorted(set(old) | set(new)) if sorted(old.get(k, [])) != sorted(new.get(k, []))]
clocked = [k for k in differ if k[2].startswith('/v1/stats')]
other = [k for k in differ if k not in clocked]
print('%d requests differ in their replies: %d statistics (wall-clock buckets), %d others' % (len(differ), len(clocked), len(other)))
for k in differ:
    print('  %s %s %s' % k[:3])
    if k in other:
        print('    old: %s\n    new: %s' % (old.get(k), new.get(k)))
sys.exit(1 if other else 0)
EOF

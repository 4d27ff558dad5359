package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
)

// The generated traffic is reproducible from its seed, valid for the service's
// policy, and has the shape docs/benchmarks.md promises.
func TestGeneratedSubmissions(t *testing.T) {
	now := time.Now()
	a, b := newGenerator(42).pool(300, 1, now), newGenerator(42).pool(300, 1, now)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("body %d differs between two generators of the same seed", i)
		}
	}
	if bytes.Equal(a[0], newGenerator(43).pool(1, 1, now)[0]) {
		t.Error("another seed gives the same traffic")
	}
	policy := servicePolicy()
	gen := newGenerator(7)
	methods, codes := map[string]bool{}, map[int]bool{}
	var contentBytes, bodyTotal, timed int
	const n = 2000
	for i := range n {
		s := gen.submission(now)
		batch, err := httpapi.ParseSubmissions(policy.Validator(), body([]submission{s}), now)
		if err != nil {
			t.Fatalf("submission %d is refused by the service's policy: %v", i, err)
		}
		m := batch.Submissions[0]
		headers := len(m.Request.Header) + len(m.Response.Header)
		if headers < minHeaders || headers > maxHeaders+3 { // + Authorization, Cookie, Set-Cookie
			t.Errorf("submission %d has %d headers, want %d to %d", i, headers, minHeaders, maxHeaders)
		}
		bodies := len(s.Request.Body) + len(s.Response.Body)
		if bodies > maxBodyBytes*11/10 || (bodies != 0 && bodies < minBodyBytes/2) {
			t.Errorf("submission %d has %d bytes of bodies, want %d to %d", i, bodies, minBodyBytes, maxBodyBytes)
		}
		bodyTotal += bodies
		if m.HasDuration {
			timed++
			if m.Duration < minDurationMS*time.Millisecond || m.Duration > maxDurationMS*time.Millisecond {
				t.Errorf("submission %d lasted %v, want %dms to %dms", i, m.Duration, minDurationMS, maxDurationMS)
			}
		}
		contentBytes += len(body([]submission{s}))
		methods[m.Method], codes[m.StatusCode] = true, true
	}
	if share := float64(timed) / n; share < 0.85 || share > 0.95 {
		t.Errorf("%.0f%% of submissions have a duration, want about 90%%", share*100)
	}
	if len(methods) < 5 || len(codes) < 10 {
		t.Errorf("%d methods and %d status codes in %d submissions: not a mix", len(methods), len(codes), n)
	}
	t.Logf("average POST body %d bytes, of which bodies %d", contentBytes/n, bodyTotal/n)
}

// seed plants rareToken in exactly one message in -rare, where the service's own
// search finds it, in any case, and finds it nowhere else.
func TestSeedPlantsTheRareToken(t *testing.T) {
	const rare = 10_000
	const n = 2*rare + 1 // 0, rare and 2*rare carry it
	now := time.Now()
	policy := servicePolicy()
	searches := []domain.Search{domain.NewSearch(rareToken), domain.NewSearch(strings.ToUpper(rareToken))}
	gen := newGenerator(1)
	var found []int
	for i := range n {
		raw := body([]submission{gen.seedSubmission(i, now, 24*time.Hour, rare)})
		// Generated JSON escapes no letter, digit or underscore: without the
		// token in the raw body, no decoded text holds it.
		if !bytes.Contains(bytes.ToLower(raw), []byte(rareToken)) {
			continue
		}
		batch, err := httpapi.ParseSubmissions(policy.Validator(), raw, now)
		if err != nil {
			t.Fatalf("seed submission %d is refused: %v", i, err)
		}
		s := batch.Submissions[0]
		m := domain.Message{Path: s.Path, Request: s.Request, Response: s.Response}
		if searches[0].Matches(m) && searches[1].Matches(m) {
			found = append(found, i)
		} else {
			t.Errorf("submission %d holds the token in %s, but the search finds it in neither case", i, raw)
		}
	}
	if want := []int{0, rare, 2 * rare}; !slices.Equal(found, want) {
		t.Errorf("the token is found in submissions %v, want %v", found, want)
	}
}

// Wherever the response leaves room, the token lands as a whole word the service
// keeps (a redacted field or a masked header would hide it).
func TestPlantFitsEveryResponse(t *testing.T) {
	now := time.Now()
	for _, resp := range []side{
		{Header: map[string]any{}, Body: "", StatusCode: 204},
		{Header: map[string]any{}, Body: "{}", StatusCode: 200},
		{Header: map[string]any{}, Body: `{"id_0":1}`, StatusCode: 200},
		{Header: map[string]any{}, Body: "plain text", StatusCode: 200},
	} {
		s := submission{Name: "shop", CreatedAt: now.UnixMilli(), Method: "GET", Path: "/", Response: resp}
		s.plant(rareToken)
		batch, err := httpapi.ParseSubmissions(servicePolicy().Validator(), body([]submission{s}), now)
		if err != nil {
			t.Fatalf("planted in %q: refused: %v", resp.Body, err)
		}
		got := batch.Submissions[0]
		if !domain.NewSearch(rareToken).Matches(domain.Message{Response: got.Response}) {
			t.Errorf("planted in %q: not found in %q / %v", resp.Body, got.Response.Body, got.Response.Header)
		}
		if resp.Body != "" && resp.Body[0] == '{' && !json.Valid([]byte(got.Response.Body)) {
			t.Errorf("planted in %q: the body is no longer JSON: %s", resp.Body, got.Response.Body)
		}
	}
}

// Every generated path is a template with its id filled in, never a
// formatting error.
func TestGeneratedPaths(t *testing.T) {
	g := newGenerator(3)
	seen := map[string]bool{}
	for range 2000 {
		p := g.submission(time.Now()).Path
		if strings.Contains(p, "%") {
			t.Fatalf("path %q", p)
		}
		seen[p] = true
	}
	if !seen["/healthz"] || !seen["/oauth/token"] {
		t.Errorf("no /healthz or /oauth/token among %d distinct paths", len(seen))
	}
}

// -body's file becomes one body of -items copies of its submission, which the
// service parses; a file that is not one JSON object is refused.
func TestFileBodies(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/body.json"
	submission := fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"GET","path":"/v1/orders","request":{"header":{}},"response":{"status_code":200,"header":{}}}`,
		time.Now().Unix())
	if err := os.WriteFile(path, []byte(submission+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, items := range []int{1, 10} {
		bodies, err := fileBodies(path, items)
		if err != nil || len(bodies) != 1 {
			t.Fatalf("items %d: %d bodies, %v", items, len(bodies), err)
		}
		batch, err := httpapi.ParseSubmissions(servicePolicy().Validator(), bodies[0], time.Now())
		if err != nil || len(batch.Submissions) != items {
			t.Fatalf("items %d: the body parses into %d submissions, %v:\n%s", items, len(batch.Submissions), err, bodies[0])
		}
	}
	if err := os.WriteFile(path, []byte(`[`+submission+`]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fileBodies(path, 1); err == nil {
		t.Error("an array was taken for one submission")
	}
}

// generate writes -n submissions, one a line, each one the service takes,
// the rare token in one in -rare: what seed would send.
func TestGenerateWritesTheSeedsSubmissions(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-n", "25", "-rare", "10", "-seed", "3", "generate"}, nil, &out, &errs); code != 0 {
		t.Fatalf("generate exited %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 25 {
		t.Fatalf("generate -n 25 wrote %d lines", len(lines))
	}
	policy, now, rare := servicePolicy(), time.Now(), 0
	for i, line := range lines {
		if _, err := httpapi.ParseSubmissions(policy.Validator(), []byte(line), now); err != nil {
			t.Errorf("line %d is refused by the service's policy: %v", i+1, err)
		}
		if strings.Contains(line, rareToken) {
			rare++
		}
	}
	if rare != 3 {
		t.Errorf("%d of 25 lines hold the rare token; want 3 (one in 10, from the first)", rare)
	}
}

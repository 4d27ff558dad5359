package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// TestMain serves a limit's handler when the tool starts this test binary as
// its child process (startChild runs os.Executable with the handler's name).
func TestMain(m *testing.M) {
	if len(os.Args) == 2 {
		if _, ok := childHandlers[os.Args[1]]; ok {
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

func TestOnlyLoopbackTargets(t *testing.T) {
	for _, url := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:9"} {
		if _, err := newServer(url, "k"); err != nil {
			t.Errorf("newServer(%q): %v", url, err)
		}
	}
	for _, url := range []string{"http://10.0.0.1:8080", "http://example.com", "ftp://127.0.0.1", "127.0.0.1:8080"} {
		if _, err := newServer(url, "k"); err == nil {
			t.Errorf("newServer(%q) accepted a target off this machine or not HTTP", url)
		}
	}
	var stderr bytes.Buffer
	for _, args := range [][]string{
		{"-limit", "mongodb", "-mongodb-uri", "mongodb://db.example.com:27017", "ingest"},
		{"-duration", "100h", "ingest"},
		{"-n", "0", "seed"},
		{"-rare", "0", "seed"},
		{"-format", "xml", "export"},
		{"-limit", "unmarshal", "ingest"},
		{"hammer"},
	} {
		if _, _, err := parse(args, &stderr); err == nil {
			t.Errorf("parse(%q) accepted it", args)
		}
	}
}

// An ingest attack on the bare handler: every request answers 200 with the
// identities the API would give, and the report counts them.
func TestIngestAgainstTheBareHandler(t *testing.T) {
	srv := httptest.NewServer(bareHandler(servicePolicy(), httpapi.DefaultMaxBodyBytes))
	defer srv.Close()
	target, err := newServer(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	bodies := newGenerator(1).pool(20, 3, time.Now())
	// The 40 targets end the attack; the duration only bounds it, so that a
	// loaded machine still sends them all.
	l := load{connections: 4, duration: time.Minute, timeout: 5 * time.Second, maxWorkers: 4}
	rep := attack("test", l, 3, limited(40, target.ingestTargets(bodies)), true, nil)
	if rep.all.Requests != 40 || rep.byOutcome[outcomeOK] == nil || rep.byOutcome[outcomeOK].Requests != 40 {
		t.Fatalf("40 requests, outcomes %v: %v", rep.all.StatusCodes, rep.errors)
	}
	if len(rep.acked) != 120 || slices.Contains(rep.acked, "") {
		t.Errorf("%d acknowledged ids, want 3 per request", len(rep.acked))
	}
	if rep.ingestRate() <= 0 {
		t.Error("no ingest rate")
	}
	var out strings.Builder
	rep.print(&out)
	if !strings.Contains(out.String(), "ingest") || !strings.Contains(out.String(), "p99") {
		t.Errorf("report:\n%s", out.String())
	}
}

// The decode handler answers 200 with its fixed reply to any JSON body, and
// 400 to anything else, storing nothing.
func TestDecodeHandler(t *testing.T) {
	srv := httptest.NewServer(decodeHandler(1 << 10))
	defer srv.Close()
	for body, want := range map[string]int{
		`{"name":"a"}`:                         http.StatusOK,
		`[1, "two", {"three": [null]}]`:        http.StatusOK,
		`{"name":`:                             http.StatusBadRequest,
		`"` + strings.Repeat("x", 2<<10) + `"`: http.StatusRequestEntityTooLarge,
	} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%.20s: %d %s, want %d", body, resp.StatusCode, reply, want)
		}
		if want == http.StatusOK && !bytes.Equal(reply, decodeReply) {
			t.Errorf("%.20s: reply %s", body, reply)
		}
	}
}

// An ingest run with -limit decode,bare: each handler runs in a child process
// (this test binary, see TestMain), and the run prints the server's rate and
// CPU per message against both. The test process stands in for reqlogd.
func TestIngestAgainstTheDecodeLimit(t *testing.T) {
	svc := httptest.NewServer(bareHandler(servicePolicy(), httpapi.DefaultMaxBodyBytes))
	defer svc.Close()
	o, mode, err := parse([]string{"-url", svc.URL, "-limit", "decode,bare", "-duration", "1s", "-connections", "2",
		"-pool", "20", "-pid", strconv.Itoa(os.Getpid()), "ingest"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := execute(t.Context(), mode, o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`== limit: decode handler: 2 connections for 1s`),
		regexp.MustCompile(`status codes: map\[200:\d+\]`),
		regexp.MustCompile(`cpu: the decode handler spent \d+\.\dµs per message`),
		regexp.MustCompile(`cpu: the bare handler spent \d+\.\dµs per message`),
		regexp.MustCompile(`cpu: the server \(pid \d+\) spent \d+\.\dµs per message`),
		regexp.MustCompile(`ratio to the decode limit: \d+ / \d+ messages/s = \d+%`),
		regexp.MustCompile(`cpu per message against the decode handler: [\d.]+µs / [\d.]+µs = [\d.]+ times`),
		regexp.MustCompile(`ratio to the bare limit: \d+ / \d+ messages/s = \d+%`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "shared-core bound") {
		t.Errorf("a shared-core bound without a store:\n%s", out.String())
	}
}

// The CPU time of this process grows as it works, read from /proc.
func TestProcessCPU(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc/<pid>/stat here: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		after, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		for i := range 1_000_000 { // work, so that the clock ticks
			_ = strconv.Itoa(i)
		}
	}
	t.Error("the process's CPU time did not grow in 10s of work")
}

// With -rate, each worker keeps its connection between requests, as clients with
// keep-alive do. The server answers requests in groups of five, so five are in
// flight at once while the attack starts with one worker: an idle pool of one
// would close four connections after every group and dial them again.
func TestRateAttackKeepsItsConnections(t *testing.T) {
	const group, requests = 5, 50
	var mu sync.Mutex
	var waiting []chan struct{}
	var dialled atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		released := make(chan struct{})
		mu.Lock()
		if waiting = append(waiting, released); len(waiting) == group {
			for _, c := range waiting {
				close(c)
			}
			waiting = nil
		}
		mu.Unlock()
		select {
		case <-released:
		case <-r.Context().Done():
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	target, err := newServer(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	l := load{connections: 1, rate: 100, duration: time.Second, timeout: 10 * time.Second, maxWorkers: 64}
	rep := attack("test", l, 1, limited(requests, target.ingestTargets([][]byte{[]byte("[]")})), false, nil)
	if rep.all.Requests != requests || rep.all.StatusCodes["200"] != requests {
		t.Fatalf("%d requests, outcomes %v: %v", rep.all.Requests, rep.all.StatusCodes, rep.errors)
	}
	// Reused connections need about one group's worth; a busy machine's late
	// releases add some. Closing each after its request would dial one per
	// request.
	if n := dialled.Load(); n > requests/2 {
		t.Errorf("%d connections for %d requests in groups of %d: connections are closed and dialled again", n, requests, group)
	}
}

func TestAcknowledgedIDs(t *testing.T) {
	for body, want := range map[string][]string{
		`{"status":true,"data":{"id":"a","reference":"msg_a"}}`: {"a"},
		`{"status":true,"data":[{"id":"a"},{"id":"b"}]}`:        {"a", "b"},
		`{"status":false,"message":"no"}`:                       nil,
		`not json`:                                              nil,
	} {
		if got := acknowledgedIDs([]byte(body)); !slices.Equal(got, want) {
			t.Errorf("acknowledgedIDs(%s) = %q, want %q", body, got, want)
		}
	}
}

func TestVerifyFindsWhatTheServerHas(t *testing.T) {
	mux := httptest.NewServer(nil)
	defer mux.Close()
	srv, err := newServer(mux.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	// The default mux answers 404 for everything: nothing is found, within the deadline.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	v := srv.verify(ctx, []string{"x", "y"}, 300*time.Millisecond)
	if v.acknowledged != 2 || v.found != 0 || len(v.missing) != 2 {
		t.Errorf("verify against a server without the messages: %+v", v)
	}
}

// With the bare handler at 6,000 and a store at 2,000 messages/s, a message costs
// 1/6000 + 1/2000 s of the machine together: 1,500 messages/s at most.
func TestRatiosIncludeTheSharedCoreBound(t *testing.T) {
	var out strings.Builder
	printRatios(&out, 1200, 0, []string{"bare", "mongodb"}, []ceiling{{rate: 6000}, {rate: 2000}})
	for _, want := range []string{
		"ratio to the bare limit: 1200 / 6000 messages/s = 20%",
		"ratio to the mongodb limit: 1200 / 2000 messages/s = 60%",
		"shared-core bound with mongodb: 1500 messages/s (75% of the direct store) if it is CPU-bound; reached 80% of it",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	printRatios(&out, 1200, 0, []string{"mongodb"}, []ceiling{{rate: 2000}})
	if strings.Contains(out.String(), "bound") {
		t.Errorf("a bound without the bare handler measured:\n%s", out.String())
	}
}

// search, stats and export against a real service seeded by the tool: the search
// finds the planted messages, and every request of the three workloads succeeds.
func TestExplorerWorkloads(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	srv, err := newServer(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	o, _, err := parse([]string{"-n", "300", "-rare", "100", "-connections", "2", "-duration", "1ms", "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := seed(ctx, srv, newGenerator(o.seed), o, &out); err != nil {
		t.Fatalf("seed: %v\n%s", err, out.String())
	}

	out.Reset()
	search, err := srv.prepareSearch(ctx, &out)
	if err != nil || !strings.Contains(out.String(), "finds 3 messages on its first page\n") {
		t.Fatalf("prepare search: %v\n%s", err, out.String())
	}
	l := load{connections: 2, duration: 10 * time.Second, timeout: 5 * time.Second, maxWorkers: 2}
	rep := attack("search", l, 1, limited(20, srv.getTargets(search)), false, nil)
	if m := rep.byKind[kindSearch]; m == nil || m.Requests != 20 || m.StatusCodes["200"] != 20 {
		t.Errorf("search: %v, errors %v", rep.all.StatusCodes, rep.errors)
	}

	out.Reset()
	stats, err := srv.prepareStats(ctx, "", &out)
	if err != nil || !strings.Contains(out.String(), ": 300 messages, ") {
		t.Fatalf("prepare stats: %v\n%s", err, out.String())
	}
	rep = attack("stats", l, 1, limited(10, srv.getTargets(stats)), false, nil)
	if m := rep.byKind[kindStats]; m == nil || m.Requests != 10 || m.StatusCodes["200"] != 10 {
		t.Errorf("stats: %v, errors %v", rep.all.StatusCodes, rep.errors)
	}

	for _, format := range []string{"ndjson", "csv"} {
		out.Reset()
		o.format = format
		if err := srv.export(ctx, "export", o, &out); err != nil {
			t.Fatalf("export %s: %v", format, err)
		}
		if !strings.Contains(out.String(), "export: 300 messages in ") {
			t.Errorf("export %s:\n%s", format, out.String())
		}
	}
}

// An interrupt ends an attack early, with a report of what it sent, instead of
// leaving it to run for its whole duration.
func TestInterruptEndsTheAttack(t *testing.T) {
	var seen atomic.Int64
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == 1 {
			close(started)
		}
	}))
	defer srv.Close()
	target, err := newServer(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-started // the attack, and so its signal handler, runs
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	l := load{connections: 1, rate: 50, duration: time.Minute, timeout: 10 * time.Second, maxWorkers: 4}
	began := time.Now()
	rep := attack("test", l, 1, target.ingestTargets([][]byte{[]byte("[]")}), false, nil)
	if took := time.Since(began); took > 30*time.Second || rep.all.Requests == 0 {
		t.Errorf("the attack took %s and sent %d requests after an interrupt", took, rep.all.Requests)
	}
}

// fair against a real service with two accounts: both phases run, the heavy
// account's statistics calls are answered, and the comparison names both of the
// other account's request kinds.
func TestFairWorkload(t *testing.T) {
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	handler := httpapitest.Serve(t, memory.New(), conformance.APIConfig{
		Keys: []conformance.APIKey{{Account: "light", Domain: domain.DomainLive, Key: "light-key"},
			{Account: "heavy", Domain: domain.DomainLive, Key: "heavy-key"}},
		Policy: policy,
	})
	svc := httptest.NewServer(handler)
	defer svc.Close()
	ctx := t.Context()
	for _, key := range []string{"light-key", "heavy-key"} {
		srv, err := newServer(svc.URL, key)
		if err != nil {
			t.Fatal(err)
		}
		o, _, err := parse([]string{"-n", "200", "-connections", "2", "seed"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := seed(ctx, srv, newGenerator(o.seed), o, io.Discard); err != nil {
			t.Fatalf("seed %s: %v", key, err)
		}
	}
	o, mode, err := parse([]string{"-key", "light-key", "-heavy-key", "heavy-key", "-rate", "40", "-duration", "500ms",
		"-pool", "20", "fair"}, io.Discard)
	if err != nil || mode != "fair" {
		t.Fatalf("parse: %v, mode %q", err, mode)
	}
	srv, err := newServer(svc.URL, "light-key")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := srv.fair(ctx, "fair", o, &out); err != nil {
		t.Fatalf("fair: %v\n%s", err, out.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`== fair \(quiet\)`), regexp.MustCompile(`== fair \(contended\)`),
		regexp.MustCompile(`\d+ calls finished: statuses map\[200:\d+`),
		regexp.MustCompile(`(?m)^ingest +p50 .* p99 .* times`), regexp.MustCompile(`(?m)^list:first +p50 `),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("no %s in:\n%s", want, out.String())
		}
	}
	o.fair.heavyKey = "light-key"
	if err := srv.fair(ctx, "fair", o, io.Discard); err == nil {
		t.Error("fair with the same key for both accounts ran")
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/app"
)

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
	srv := httptest.NewServer(bareHandler(servicePolicy(), app.DefaultMaxBodyBytes))
	defer srv.Close()
	target, err := newServer(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	bodies := newGenerator(1).pool(20, 3, time.Now())
	l := load{connections: 4, duration: 300 * time.Millisecond, timeout: 5 * time.Second, maxWorkers: 4}
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
	if n := dialled.Load(); n > 2*group {
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
	printRatios(&out, 1200, []string{"bare", "mongodb"}, []float64{6000, 2000})
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
	printRatios(&out, 1200, []string{"mongodb"}, []float64{2000})
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
	stats, err := srv.prepareStats(ctx, &out)
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

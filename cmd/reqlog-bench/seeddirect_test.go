package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A direct seed stores every generated message, in the scope asked for, with the
// token planted one in -rare, as the API seed would.
func TestSeedIntoStoresEveryMessage(t *testing.T) {
	o, _, err := parse([]string{"-n", "1234", "-rare", "100", "-connections", "3", "-direct", "elasticsearch", "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	scope := domain.Scope{Account: "bench", Domain: domain.DomainLive}
	var out strings.Builder
	if err := seedInto(t.Context(), store, scope, newGenerator(o.seed), o, &out); err != nil {
		t.Fatalf("seedInto: %v\n%s", err, out.String())
	}
	count := func(filter domain.Filter) int { return countListed(t, store, scope, filter) }
	if n := count(domain.Filter{}); n != 1234 {
		t.Errorf("%d messages stored, want 1234", n)
	}
	if n := count(domain.Filter{Text: rareToken}); n != 13 { // messages 0, 100, ..., 1200
		t.Errorf("%d messages hold %s, want 13", n, rareToken)
	}
	if n := count(domain.Filter{From: time.Now().Add(-25 * time.Hour)}); n != 1234 {
		t.Errorf("%d messages created in the last 25 hours, want all 1234", n)
	}
	if !strings.Contains(out.String(), "seed: 1234 messages stored directly") {
		t.Errorf("report:\n%s", out.String())
	}
}

// countListed counts the messages of scope that pass filter, read an hour
// from now (past the policy's visibility delay).
func countListed(t *testing.T, store ports.MessageReader, scope domain.Scope, filter domain.Filter) int {
	t.Helper()
	later := time.Now().Add(time.Hour)
	n := 0
	q := domain.Query{Scope: scope, Filter: filter, Limit: 1000}
	for {
		page, err := store.List(t.Context(), q, later)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Messages)
		if !page.HasMore {
			return n
		}
		last := page.Messages[len(page.Messages)-1]
		q.After = &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// -direct sqlite seeds a data directory, which reqlogd then opens.
func TestDirectSeedIntoSQLite(t *testing.T) {
	dir := t.TempDir()
	o, _, err := parse([]string{"-n", "321", "-connections", "2", "-direct", "sqlite", "-sqlite-dir", dir, "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := seedDirect(t.Context(), newGenerator(o.seed), o, &out); err != nil {
		t.Fatalf("seedDirect: %v\n%s", err, out.String())
	}
	store, err := sqlite.New(t.Context(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n := countListed(t, store, domain.Scope{Account: "bench", Domain: domain.DomainLive}, domain.Filter{}); n != 321 {
		t.Errorf("%d messages stored, want 321", n)
	}
}

// failingWriter stores nothing after its first few appends.
type failingWriter struct {
	appends atomic.Int64
}

func (w *failingWriter) Append(_ context.Context, msgs []domain.Message) error {
	if w.appends.Add(1) > 2 {
		return errors.New("the store is gone")
	}
	return nil
}

// A direct seed whose store fails stops with the error and says how many were stored.
func TestSeedIntoStopsWhenTheStoreFails(t *testing.T) {
	o, _, err := parse([]string{"-n", "5000", "-connections", "1", "-direct", "elasticsearch", "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = seedInto(t.Context(), &failingWriter{}, domain.Scope{Account: "a", Domain: domain.DomainTest}, newGenerator(1), o, &out)
	if err == nil || !strings.Contains(err.Error(), "the store is gone") || !strings.Contains(err.Error(), "1000 of 5000 messages stored") {
		t.Errorf("seedInto: %v", err)
	}
}

func TestDirectSeedFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-direct", "elasticsearch", "ingest"},
		{"-direct", "mongodb", "seed"},
		{"-direct", "elasticsearch", "-elasticsearch-url", "http://es.example.com:9200", "seed"},
		{"-direct", "elasticsearch", "-direct-scope", "bench:prod", "seed"},
		{"-direct", "elasticsearch", "-direct-scope", ":live", "seed"},
	} {
		if _, _, err := parse(args, io.Discard); err == nil {
			t.Errorf("parse(%q) accepted it", args)
		}
	}
}

// The API seed fails when a batch was answered 503: nothing of it was stored.
func TestSeedCountsUnavailableAsNotStored(t *testing.T) {
	var requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		if requests.Add(1)%3 == 0 {
			http.Error(w, `{"status":false}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":true,"data":[]}`)
	}))
	defer api.Close()
	srv, err := newServer(api.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := parse([]string{"-n", "1000", "-items", "100", "-connections", "1", "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = seed(t.Context(), srv, newGenerator(o.seed), o, &out)
	if err == nil || !strings.Contains(err.Error(), "700 of 1000 messages stored") {
		t.Errorf("seed: %v\n%s", err, out.String())
	}
}

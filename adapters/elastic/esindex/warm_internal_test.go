package esindex

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
)

// warmTestIndices sets up the indices of a prefix of their own on the test
// node, as the store does, and deletes every index of that prefix, hidden ones
// included, when t ends.
func warmTestIndices(t *testing.T, warmUp time.Duration) (*Indices, func(method, path string, body string) (int, []byte)) {
	t.Helper()
	base := elastictest.URL(t)
	var suffix [4]byte
	_, _ = crand.Read(suffix[:])
	prefix := "warm-" + hex.EncodeToString(suffix[:])
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw
	}
	s := testIndices(t, base, Config{Prefix: prefix, WarmUp: warmUp})
	t.Cleanup(func() {
		for _, index := range prefixIndices(t, call, prefix) {
			call(http.MethodDelete, "/"+index, "")
		}
		call(http.MethodDelete, "/_index_template/"+prefix+"-messages", "")
		call(http.MethodDelete, "/_index_template/"+prefix+"-rollups", "")
	})
	return s, call
}

// prefixIndices lists every index of prefix, hidden ones included.
func prefixIndices(t *testing.T, call func(string, string, string) (int, []byte), prefix string) []string {
	t.Helper()
	status, raw := call(http.MethodGet, "/_cat/indices/"+prefix+"-*?format=json&h=index&expand_wildcards=all", "")
	if status != http.StatusOK {
		t.Fatalf("listing the indices of %s: %d %s", prefix, status, raw)
	}
	var rows []struct{ Index string }
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Index)
	}
	slices.Sort(names)
	return names
}

// assertOnlyTheDays fails t unless the indices of s's prefix are the daily
// indices of now and the next day, messages and rollups, the messages' empty:
// the warm-up left nothing a reader could see.
func assertOnlyTheDays(t *testing.T, s *Indices, call func(string, string, string) (int, []byte), now time.Time) {
	t.Helper()
	want := []string{s.names.For(now), s.names.For(now.AddDate(0, 0, 1)), s.names.RollupsFor(now), s.names.RollupsFor(now.AddDate(0, 0, 1))}
	if got := prefixIndices(t, call, s.cfg.Prefix); !slices.Equal(got, want) {
		t.Errorf("indices after the warm-up: %v, want only %v", got, want)
	}
	call(http.MethodPost, "/"+s.names.ReadPattern()+"/_refresh", "")
	status, raw := call(http.MethodGet, "/"+s.names.ReadPattern()+"/_count", "")
	var count struct{ Count int }
	if err := json.Unmarshal(raw, &count); status != http.StatusOK || err != nil || count.Count != 0 {
		t.Errorf("the daily indices hold %d documents after the warm-up (%d %s), want none", count.Count, status, raw)
	}
}

func TestPrepareWritesWarmsUpAndLeavesNothing(t *testing.T) {
	s, call := warmTestIndices(t, 15*time.Second)
	now := time.Now()
	report, err := s.PrepareWrites(t.Context(), now)
	if err != nil {
		t.Fatalf("PrepareWrites: %v", err)
	}
	if report.CopiesErr != nil {
		t.Errorf("the daily indices' copies: %v (a single node holds every copy it keeps)", report.CopiesErr)
	}
	if len(report.Rounds) == 0 {
		t.Fatal("no round of the warm-up completed")
	}
	for i, round := range report.Rounds {
		if round.Docs != warmWriters*warmBatch { // as many bulk requests as the committer has writers
			t.Errorf("round %d wrote %d documents, want %d", i, round.Docs, warmWriters*warmBatch)
		}
	}
	t.Logf("warm-up: %d rounds in %s, settled %v", len(report.Rounds), report.Took.Round(time.Millisecond), report.Settled)
	for _, day := range []time.Time{now, now.AddDate(0, 0, 1)} {
		status, raw := call(http.MethodGet, "/_cluster/health/"+s.names.For(day), "")
		var health struct{ Status string }
		if err := json.Unmarshal(raw, &health); status != http.StatusOK || err != nil || health.Status != "green" {
			t.Errorf("health of %s: %d %s, want green", s.names.For(day), status, raw)
		}
	}
	assertOnlyTheDays(t, s, call, now)
}

func TestWarmUpCutShortByItsBudgetLeavesNothing(t *testing.T) {
	defer func(fast time.Duration) { warmFastRound = fast }(warmFastRound)
	warmFastRound = 0 // no round is fast enough: the budget ends the warm-up, mid-round
	s, call := warmTestIndices(t, 2*time.Second)
	now := time.Now()
	report, err := s.PrepareWrites(t.Context(), now)
	if err != nil {
		t.Fatalf("PrepareWrites: %v (a warm-up that runs out of time is no failure)", err)
	}
	if report.Settled {
		t.Error("the warm-up settled although no round could count as fast")
	}
	assertOnlyTheDays(t, s, call, now)
}

func TestWarmUpDisabled(t *testing.T) {
	s, call := warmTestIndices(t, -1)
	now := time.Now()
	report, err := s.PrepareWrites(t.Context(), now)
	if err != nil {
		t.Fatalf("PrepareWrites: %v", err)
	}
	if len(report.Rounds) != 0 || report.Took != 0 {
		t.Errorf("a disabled warm-up ran: %+v", report)
	}
	assertOnlyTheDays(t, s, call, now) // the days are still created
}

func TestWarmUpDropsStaleWarmUpIndices(t *testing.T) {
	s, call := warmTestIndices(t, time.Second)
	created := map[string]time.Time{}
	// Elasticsearch sets creation dates itself: "stale" is made first, and
	// the clock is then set to make it just old enough, and "recent" not.
	for _, name := range []string{"stale", "recent"} {
		index := s.cfg.Prefix + warmIndexSuffix + name
		if status, raw := call(http.MethodPut, "/"+index, `{"settings":{"index":{"hidden":true}}}`); status != http.StatusOK {
			t.Fatalf("creating %s: %d %s", index, status, raw)
		}
		status, raw := call(http.MethodGet, "/"+index+"/_settings/index.creation_date?flat_settings=true", "")
		var settings map[string]struct {
			Settings map[string]string `json:"settings"`
		}
		if err := json.Unmarshal(raw, &settings); status != http.StatusOK || err != nil {
			t.Fatalf("creation date of %s: %d %s", index, status, raw)
		}
		ms, err := strconv.ParseInt(settings[index].Settings["index.creation_date"], 10, 64)
		if err != nil {
			t.Fatalf("creation date of %s: %s", index, raw)
		}
		created[name] = time.UnixMilli(ms)
	}
	if !created["recent"].After(created["stale"]) {
		t.Fatalf("both indices created at %s: the test needs them a millisecond apart", created["stale"])
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s.dropStaleWarmIndices(ctx, created["stale"].Add(staleWarmIndex+time.Millisecond))
	got := prefixIndices(t, call, s.cfg.Prefix)
	stale, recent := s.cfg.Prefix+warmIndexSuffix+"stale", s.cfg.Prefix+warmIndexSuffix+"recent"
	if slices.Contains(got, stale) || !slices.Contains(got, recent) {
		t.Errorf("indices after dropping stale warm-up indices: %v, want %s gone and %s (another start-up's, running) kept", got, stale, recent)
	}
}

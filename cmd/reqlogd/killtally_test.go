package main

import (
	"context"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Counts stay true across kill -9: reqlogd keeps one in ten of acme's
// exchanges (REQLOG_RULES_FILE), and is killed under load a random moment
// after its first acknowledgement, again and again on the same directory.
// The statistics then count at least every exchange acknowledged, those
// dropped included: a submission's tallies are written in the one write of
// its kept messages, before its 200.
func TestKill9NeverCountsFewerThanAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("reqlogd processes killed under load; not in -short")
	}
	dir := t.TempDir()
	rules := writeRulesFile(t, "rules.yaml", "acme:\n  ingest:\n    - {id: tenth, action: sample, sample_rate: 10}\n")
	var acked int
	start := time.Now()
	for round := range 6 {
		ids := killRoundWith(t, dir, round, "REQLOG_RULES_FILE="+rules)
		if len(ids) == 0 {
			t.Fatalf("round %d: nothing acknowledged before the kill", round)
		}
		acked += len(ids)
	}
	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatalf("opening the data directory after the kills: %v", err)
	}
	defer s.Close()
	now := time.Now()
	q := stats.Query{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive},
		From: start.Add(-time.Hour).Truncate(time.Hour), To: now.Add(time.Hour).Truncate(time.Hour), Interval: stats.Intervals[3]}
	q.Filter.From, q.Filter.To = q.From, q.To
	got, err := s.Stats(context.Background(), q, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Total.Count < int64(acked) || got.Total.Dropped < int64(acked)/2 {
		t.Errorf("%d exchanges acknowledged, the statistics count %d (%d dropped): fewer than acknowledged, or few dropped",
			acked, got.Total.Count, got.Total.Dropped)
	}
	t.Logf("%d acknowledged, %d counted, %d of them dropped", acked, got.Total.Count, got.Total.Dropped)
}

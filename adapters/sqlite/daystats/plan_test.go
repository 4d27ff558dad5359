package daystats

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// The plan's choice is a function of the counts and the configured cost of
// a read by seq alone: the rollups less the rest where the lacking messages
// cost less than the walk of the scope's, the holding ones by seq where
// they do, the walk otherwise.
func TestWordReadIsChosenByTheCosts(t *testing.T) {
	defaults := Config{}.withDefaults()
	for _, tc := range []struct {
		cfg                       Config
		holding, lastSeq, counted int64
		mayPay                    bool
		want                      WordRead
	}{
		{defaults, 9400, 10_000, 9000, true, ReadLessTheRest},     // 600 lacking × 3 < 9,000
		{defaults, 600, 10_000, 9000, true, ReadBySeq},            // 600 holding × 3 < 9,000
		{defaults, 600, 10_000, 1500, true, ReadWalk},             // the scope's are few: walk them
		{defaults, 5000, 10_000, 10_000, false, ReadWalk},         // half: never by seq
		{defaults, 10_000, 10_000, 10_000, true, ReadLessTheRest}, // every message holds it
		{Config{LookupCostInRows: 20}.withDefaults(), 600, 10_000, 9000, false, ReadWalk},
	} {
		if got := tc.cfg.bySeqMayPay(tc.holding, tc.lastSeq); got != tc.mayPay {
			t.Errorf("%d of %d holding, a lookup %d rows: a read by seq may pay %v, want %v",
				tc.holding, tc.lastSeq, tc.cfg.LookupCostInRows, got, tc.mayPay)
		}
		if got := tc.cfg.choose(tc.holding, tc.lastSeq, tc.counted); tc.mayPay && got != tc.want {
			t.Errorf("%d of %d holding, %d counted, a lookup %d rows: %q, want %q",
				tc.holding, tc.lastSeq, tc.counted, tc.cfg.LookupCostInRows, got, tc.want)
		}
	}
}

// The wall-clock probe finds reads by seq warm under a bound no read
// reaches and cold under one every read passes; no seq is warm without a
// read; a fixed probe says what it is.
func TestProbes(t *testing.T) {
	ctx := t.Context()
	dir, err := dayfile.Open(ctx, dayfile.Options{Dir: t.TempDir(), MinFreeBytes: -1, Files: sqlitedb.Options{Readers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	now := time.Now().UTC()
	var msgs []domain.Message
	for range 100 {
		msgs = append(msgs, conformance.NewMessage(t, scope, now))
	}
	f, err := dir.Acquire(ctx, dayfile.Part{Day: dayfile.DayOf(now)}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if err := f.Append(ctx, msgs, true); err != nil {
		t.Fatal(err)
	}
	seqs := []int64{1, 7, 50, 99}
	for _, tc := range []struct {
		probe Probe
		seqs  []int64
		want  bool
	}{
		{WallClockProbe{MaxLookup: time.Hour}, seqs, true},
		{WallClockProbe{MaxLookup: time.Nanosecond}, seqs, false},
		{WallClockProbe{MaxLookup: time.Nanosecond}, nil, true},
		{FixedProbe(true), seqs, true},
		{FixedProbe(false), seqs, false},
	} {
		if warm, err := tc.probe.Warm(ctx, f, tc.seqs); err != nil || warm != tc.want {
			t.Errorf("%#v of %d seqs: warm %v, %v; want %v", tc.probe, len(tc.seqs), warm, err, tc.want)
		}
	}
}

// Negative costs are refused, each field named.
func TestConfigRefusesNegativeCosts(t *testing.T) {
	bad := Config{FewMessages: -1, LookupCostInRows: -3}.Validate("Stats.")
	if len(bad) != 2 || bad[0].Field != "Stats.FewMessages" || bad[1].Field != "Stats.LookupCostInRows" {
		t.Fatalf("%+v", bad)
	}
	if bad := (Config{}).Validate(""); len(bad) != 0 {
		t.Fatalf("the defaults refused: %+v", bad)
	}
}

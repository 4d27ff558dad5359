package daystats

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Config is the plan of a q of one word (word.go): what its reads cost, and
// the probe that tells whether those costs hold. The zero value of a field
// means its default.
type Config struct {
	// FewMessages: the messages holding a q's words in a day file, when they
	// are at most this many, are read by seq whatever else (sorting a few
	// thousand costs less than walking the day, even from disk).
	FewMessages int
	// LookupCostInRows is what reading one message by its seq costs, in rows
	// of a walk of the statistics index. A read by seq is taken only where it
	// costs less than the walk so measured.
	LookupCostInRows int64
	// Probe tells whether a day file's messages read by seq cost what
	// LookupCostInRows says; nil means WallClockProbe{}.
	Probe Probe
}

// Defaults of Config.
const (
	DefaultFewMessages = 2000
	// DefaultLookupCostInRows: about 4.3 µs a message read by seq against
	// 1.5 µs a row walked and counted, at a million messages (2026-11-27).
	DefaultLookupCostInRows = 3
)

func (c Config) withDefaults() Config {
	if c.FewMessages == 0 {
		c.FewMessages = DefaultFewMessages
	}
	if c.LookupCostInRows == 0 {
		c.LookupCostInRows = DefaultLookupCostInRows
	}
	if c.Probe == nil {
		c.Probe = WallClockProbe{}
	}
	return c
}

// Validate reports the fields of c that cannot be used, named under prefix.
func (c Config) Validate(prefix string) []domain.FieldError {
	var bad []domain.FieldError
	if c.FewMessages < 0 {
		bad = append(bad, domain.FieldError{Field: prefix + "FewMessages", Message: "must not be negative"})
	}
	if c.LookupCostInRows < 0 {
		bad = append(bad, domain.FieldError{Field: prefix + "LookupCostInRows", Message: "must not be negative"})
	}
	return bad
}

// A Probe tells whether reading a day file's messages of seqs by seq costs
// what Config.LookupCostInRows says: it does when their pages are in memory
// (SQLite's cache or the operating system's), and costs a hundred times
// more when they must be read from disk, where the walk of the statistics
// index, whose pages are dense and read in order, costs far less.
type Probe interface {
	Warm(ctx context.Context, f *dayfile.File, seqs []int64) (bool, error)
}

// FixedProbe answers the same for every file: for tests, whose answers must
// not depend on timing, and for a deployment that knows where its pages are.
type FixedProbe bool

// Warm is p.
func (p FixedProbe) Warm(context.Context, *dayfile.File, []int64) (bool, error) { return bool(p), nil }

// WallClockProbe, the default Probe, times reads of some of the seqs: the
// median of Reads reads of Each seqs at random (the same ones each time
// would be in memory from the probe before, whatever the others), so that a
// read the scheduler or the collector held up does not decide. Its zero
// fields mean the defaults below.
type WallClockProbe struct {
	// MaxLookup is the most the median read may cost a seq: 25 µs.
	MaxLookup time.Duration
	// Reads and Each: 8 reads of 32 seqs.
	Reads, Each int
}

// Warm reports whether the median read cost at most MaxLookup a seq (no
// seq costs nothing).
func (p WallClockProbe) Warm(ctx context.Context, f *dayfile.File, seqs []int64) (bool, error) {
	if len(seqs) == 0 {
		return true, nil
	}
	maxLookup, reads, each := p.MaxLookup, p.Reads, p.Each
	if maxLookup == 0 {
		maxLookup = 25 * time.Microsecond
	}
	if reads == 0 {
		reads = 8
	}
	if each == 0 {
		each = 32
	}
	took := make([]time.Duration, 0, reads)
	for range reads {
		probe := make([]int64, min(len(seqs), each))
		for i := range probe {
			probe[i] = seqs[rand.IntN(len(seqs))]
		}
		w := &dayfile.Where{}
		w.AddSeqs(probe)
		start := time.Now()
		if err := walkSamples(ctx, f, bySeq, w, nil, func(stats.Sample) {}); err != nil {
			return false, err
		}
		took = append(took, time.Since(start)/time.Duration(len(probe)))
	}
	slices.Sort(took)
	return took[len(took)/2] <= maxLookup, nil
}

package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ExportLimits bound the exports a server runs: how many at once, and how
// slowly a reader may take one. An export holds up to a store page (about
// domain.PageBytes) for as long as its reader takes to read it, so without them
// stalled readers pin memory without end.
type ExportLimits struct {
	// PerKey is how many exports one principal (an API key's account and
	// domain, or a portal session's application) runs at once; Total how many
	// the process runs, every principal together. Beyond either, 429 with
	// Retry-After.
	PerKey int
	Total  int
	// MinRate is the slowest average rate, in bytes per second, at which a
	// reader must take its export, counted over the time spent writing it (not
	// the time spent reading the store): all writes together may take Stall plus
	// the bytes written at MinRate. 0: no average rate.
	MinRate int64
	// Stall is the longest one write may take beyond its own bytes at MinRate:
	// a reader that stops reading is cut after it.
	Stall time.Duration
}

// Defaults of ExportLimits.
const (
	DefaultExportsPerKey  = 2
	DefaultExportsTotal   = 16
	DefaultExportMinRate  = 32 << 10 // bytes per second: 256 kbit/s
	DefaultExportStall    = writeTimeout
	exportsBusyRetryAfter = 5 * time.Second
)

// DefaultExportLimits returns the default of every field.
func DefaultExportLimits() ExportLimits {
	return ExportLimits{PerKey: DefaultExportsPerKey, Total: DefaultExportsTotal, MinRate: DefaultExportMinRate, Stall: DefaultExportStall}
}

// validate names the first unusable field, or returns "".
func (l ExportLimits) validate() (field, reason string) {
	switch {
	case l.PerKey < 1:
		return "PerKey", "must be at least 1"
	case l.Total < 1:
		return "Total", "must be at least 1"
	case l.MinRate < 0:
		return "MinRate", "must not be negative (0: no minimum rate)"
	case l.Stall <= 0:
		return "Stall", "must be positive"
	}
	return "", ""
}

// exportSlots counts the exports running, per principal and in all.
type exportSlots struct {
	limits ExportLimits
	mu     sync.Mutex
	byKey  map[string]int
	total  int
}

func newExportSlots(limits ExportLimits) *exportSlots {
	return &exportSlots{limits: limits, byKey: map[string]int{}}
}

// take holds a slot for key, or answers why there is none. release gives it
// back; it may be called more than once.
func (s *exportSlots) take(key string) (release func(), refused *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byKey[key] >= s.limits.PerKey:
		return nil, &apiError{status: http.StatusTooManyRequests, retryAfter: exportsBusyRetryAfter,
			message: fmt.Sprintf("this API key or portal session already runs %d exports, its most at once: retry when one ends", s.limits.PerKey)}
	case s.total >= s.limits.Total:
		return nil, &apiError{status: http.StatusTooManyRequests, retryAfter: exportsBusyRetryAfter,
			message: "the server runs as many exports as it may at once: retry later"}
	}
	s.byKey[key]++
	s.total++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.byKey[key]--; s.byKey[key] == 0 {
			delete(s.byKey, key)
		}
		s.total--
	}), nil
}

// errSlowReader: an export's write passed the deadline its pace allowed.
var errSlowReader = errors.New("export: the client read more slowly than the minimum rate allows")

// exportPace holds an export's writes to its ExportLimits: each write gets a
// deadline of Stall plus its bytes at MinRate, and no later than all writes so
// far may take together (Stall plus every byte at MinRate, less the time the
// writes already took). A reader that stops is cut after Stall; one that
// trickles, once its average falls below MinRate. Time spent reading the store
// is not the reader's and is not counted.
type exportPace struct {
	rc      *http.ResponseController
	limits  ExportLimits
	written int64         // bytes written so far
	spent   time.Duration // time the writes took
}

// atMinRate is how long n bytes take at the minimum rate (0 without one).
func (p *exportPace) atMinRate(n int64) time.Duration {
	if p.limits.MinRate <= 0 {
		return 0
	}
	return time.Duration(float64(n) / float64(p.limits.MinRate) * float64(time.Second))
}

// allowance is how long the next write, of n bytes, may take.
func (p *exportPace) allowance(n int) time.Duration {
	allowed := p.limits.Stall + p.atMinRate(int64(n))
	if p.limits.MinRate > 0 {
		allowed = min(allowed, p.limits.Stall+p.atMinRate(p.written+int64(n))-p.spent)
	}
	return allowed
}

// wrote counts a write of n bytes that took took.
func (p *exportPace) wrote(n int, took time.Duration) {
	p.written += int64(n)
	p.spent += took
}

// send runs write, which sends n bytes (0 for a flush), under the deadline the
// pace allows: errClientGone if it fails, errSlowReader if it fails past that
// deadline.
func (p *exportPace) send(n int, write func() error) error {
	began := time.Now()
	deadline := began.Add(p.allowance(n))
	if err := p.rc.SetWriteDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return errClientGone
	}
	err := write()
	p.wrote(n, time.Since(began))
	switch {
	case err == nil:
		return nil
	case !time.Now().Before(deadline):
		return errSlowReader
	default:
		return errClientGone
	}
}

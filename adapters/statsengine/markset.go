package statsengine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
)

// ScopedMark is a Mark of one scope's application and minute.
type ScopedMark struct {
	Scope domain.Scope
	Mark
}

// MarkSet gathers what one write marks (an Append's messages, or a page of
// messages stored before the marks), by scope, application and minute.
type MarkSet struct {
	marks map[markOf]int
	list  []ScopedMark
}

type markOf struct {
	scope  domain.Scope
	name   string
	minute int64 // Unix seconds
}

// AddMessage marks m's minute, settled once m is visible.
func (s *MarkSet) AddMessage(m domain.Message) {
	s.Add(m.Scope(), m.Name, m.CreatedAt, 1, m.VisibleAt, MarkExpires(m))
}

// Add marks scope's application name in the minute of created: messages
// more, settled from settled and expired by expires.
func (s *MarkSet) Add(scope domain.Scope, name string, created time.Time, messages int64, settled, expires time.Time) {
	if s.marks == nil {
		s.marks = map[markOf]int{}
	}
	unix := created.Unix()
	key := markOf{scope, name, unix - mod(unix, 60)}
	i, ok := s.marks[key]
	if !ok {
		i = len(s.list)
		s.marks[key] = i
		s.list = append(s.list, ScopedMark{Scope: scope, Mark: Mark{Minute: time.Unix(key.minute, 0).UTC(), Name: name}})
	}
	mk := &s.list[i].Mark
	mk.Messages += messages
	mk.Expires = latest(mk.Expires, expires)
	mk.Settled = latest(mk.Settled, settled)
}

// Len is how many minutes the set marks.
func (s *MarkSet) Len() int { return len(s.list) }

// Marks are the set's marks, in the order first added, all of one fresh
// random version.
func (s *MarkSet) Marks() []ScopedMark {
	version := NewMarkVersion()
	for i := range s.list {
		s.list[i].Version = version
	}
	return s.list
}

// NewMarkVersion is a random version of 62 bits, never 0: it fits a signed
// 64-bit integer of any store.
func NewMarkVersion() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])>>2 | 1
}

// MarkExpires is when every message of m's minute stored with m's retention
// has expired: the end of the minute plus the retention. Appends to one
// minute then bound it alike, whichever writes its mark last.
func MarkExpires(m domain.Message) time.Time {
	created := m.CreatedAt.Unix()
	end := time.Unix(created-mod(created, 60)+60, 0).UTC()
	return end.Add(m.ExpiresAt.Sub(m.CreatedAt))
}

// MarkID is an id for a store's document of kind ("mark", "kept") of one
// scope's application and minute: a hash, so that any application name fits
// a store's bound on ids.
func MarkID(kind string, scope domain.Scope, name string, minute time.Time) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d", kind, scope.Account, scope.Domain, name, minute.Unix())
	return hex.EncodeToString(h.Sum(nil))
}

// SumOfMarks is a sum of an hour's marks for MarkStore.MarkHours from what a
// store's aggregation adds up: how many there are, and the sums of their
// versions' low 36 bits and of their next 26 (each sum exact in a double
// past a million marks). A mark written again changes a sum, but for a
// chance of 2^-62.
func SumOfMarks(marks, lo, hi int64) uint64 {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:], uint64(marks))
	binary.BigEndian.PutUint64(b[8:], uint64(lo))
	binary.BigEndian.PutUint64(b[16:], uint64(hi))
	h := sha256.Sum256(b[:])
	return binary.BigEndian.Uint64(h[:8])
}

// VersionParts are the parts of a mark's version whose sums SumOfMarks
// takes: its low 36 bits and its next 26.
func VersionParts(version uint64) (lo, hi int64) {
	return int64(version & (1<<36 - 1)), int64(version >> 36)
}

// MarkInBackground runs markExisting (a store's marking of the messages an
// earlier version stored without marks) until it ends or ctx does, logs
// how it went, and closes done: for a store's start-up, which must not wait.
func MarkInBackground(ctx context.Context, log *zap.Logger, markExisting func(context.Context) error, done chan<- struct{}) {
	defer close(done)
	start := time.Now()
	if err := markExisting(ctx); err != nil {
		if ctx.Err() == nil {
			log.Warn("marking the messages stored before the statistics' marks failed; their statistics are read "+
				"from the messages until a start marks them", zap.Error(err))
		}
		return
	}
	log.Debug("messages stored before the statistics' marks are marked", zap.Duration("took", time.Since(start)))
}

// MarksSince caches a store's MarksFrom once every stored message is marked
// (the state a store keeps says so), which it then stays: until then the
// store reads its state each time. Its zero value knows nothing yet.
type MarksSince struct{ all atomic.Bool }

// From returns MarksFrom given the store's state: read reports the
// earliest created_at marked from (Unix microseconds, 0: the start) and
// whether there is a state at all; without one nothing is known to be
// marked.
func (m *MarksSince) From(ctx context.Context, read func(context.Context) (from int64, found bool, err error)) (time.Time, error) {
	if m.all.Load() {
		return time.Time{}, nil
	}
	from, found, err := read(ctx)
	switch {
	case err != nil:
		return time.Time{}, err
	case !found:
		return time.Unix(0, 1<<63-1).UTC(), nil
	case from == 0:
		m.Marked()
		return time.Time{}, nil
	}
	return time.UnixMicro(from).UTC(), nil
}

// Marked notes that every stored message is marked from now on.
func (m *MarksSince) Marked() { m.all.Store(true) }

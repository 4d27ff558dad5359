package daystats

import (
	"context"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
)

// A day file's word index holds the words of its messages' bodies until the
// purge takes the bodies out (dayfile.File.ClearBodies), but from a
// message's BodiesExpireAt on no read finds its bodies' words: a q of one
// word would count it from the index. So a day file holding a message whose
// bodies have expired and are not taken out yet is counted by reading each
// message holding the word whole (readWhole), without its expired bodies.

// readWhole reads each message the word index says holds the word and
// checks it whole, without its bodies once they have expired.
const readWhole WordRead = "whole, bodies expired"

// bodiesWatch keeps, per day file, the earliest bodies expiry of its
// messages whose bodies are not taken out, as read so far: each look reads
// only the messages appended since the last (by seq), and those past
// class.bodies_cleared alone. It is safe for concurrent use.
type bodiesWatch struct {
	mu    sync.Mutex
	files map[dayfile.Part]bodiesSeen
}

// bodiesSeen is what a look at a day file found.
type bodiesSeen struct {
	scanned  int64 // the last seq read
	cleared  int64 // the file's bodies_cleared then
	earliest int64 // Unix microseconds; 0: none
}

func newBodiesWatch() *bodiesWatch { return &bodiesWatch{files: map[dayfile.Part]bodiesSeen{}} }

// expired reports whether f holds a message whose bodies have expired at
// now and are not taken out yet.
func (w *bodiesWatch) expired(ctx context.Context, f *dayfile.File, now time.Time) (bool, error) {
	w.mu.Lock()
	seen := w.files[f.Part()]
	w.mu.Unlock()
	var last, cleared int64
	if err := f.Read.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0), (SELECT coalesce(max(bodies_cleared), 0) FROM class) FROM messages`).
		Scan(&last, &cleared); err != nil {
		return false, f.Error(ctx, "stats: expired bodies", err)
	}
	if last < seen.scanned || cleared != seen.cleared { // the file made anew, or bodies taken out
		seen = bodiesSeen{scanned: cleared, cleared: cleared}
	}
	if last > seen.scanned {
		var earliest int64
		if err := f.Read.QueryRowContext(ctx, `SELECT coalesce(min(bodies_expires), 0) FROM messages WHERE seq > ? AND seq <= ? AND bodies_expires > 0`,
			seen.scanned, last).Scan(&earliest); err != nil {
			return false, f.Error(ctx, "stats: expired bodies", err)
		}
		if earliest != 0 && (seen.earliest == 0 || earliest < seen.earliest) {
			seen.earliest = earliest
		}
		seen.scanned = last
	}
	w.mu.Lock()
	w.files[f.Part()] = seen
	w.mu.Unlock()
	return seen.earliest != 0 && seen.earliest <= now.UnixMicro(), nil
}

package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

// tombstones are the subjects of every account's pending erasures, as this
// replica last read them from the journal: until the erasure job has hidden
// an erasure's messages and journaled it hidden, every read of its account
// leaves them out (domain.Filter.Hidden, by the store's subject index). An
// account without a pending erasure has none, and its reads are as before.
//
// A replica trusts a read of the journal for lease after it began, and
// reads the journal again, before it answers a read, once that has passed;
// an erasure is answered lease after it was journaled. So every read on
// every replica that follows the answer leaves its messages out, without
// asking the journal each time: the journal is read every lease/2 in the
// background (ErasureJob), the read waits only when that is late.
type tombstones struct {
	journal ports.ErasureJournal
	eraser  ports.Eraser
	lease   time.Duration
	// held is the journal's pending erasures, by account, and when the
	// read that found them began (on the monotonic clock).
	held    atomic.Pointer[heldTombstones]
	reading sync.Mutex // one read of the journal at a time
}

type heldTombstones struct {
	began     time.Time
	byAccount map[string]*domain.HiddenSubjects
}

// newTombstones returns the tombstones of journal's erasures, nil (none
// ever) when the server cannot erase.
func newTombstones(journal ports.ErasureJournal, eraser ports.Eraser, lease time.Duration) *tombstones {
	if journal == nil || eraser == nil {
		return nil
	}
	return &tombstones{journal: journal, eraser: eraser, lease: lease}
}

// of returns the subjects account's reads leave out now (nil: none), after
// reading the journal again when the last read is older than the lease.
func (t *tombstones) of(ctx context.Context, account string) (*domain.HiddenSubjects, error) {
	if t == nil {
		return nil, nil
	}
	held := t.held.Load()
	if held == nil || time.Since(held.began) >= t.lease {
		var err error
		if held, err = t.refresh(ctx, false); err != nil {
			return nil, fmt.Errorf("the pending erasures: %w", err)
		}
	}
	return held.byAccount[account], nil
}

// refresh reads the journal unless (without force) another call did
// within the lease meanwhile, and holds its pending erasures.
func (t *tombstones) refresh(ctx context.Context, force bool) (*heldTombstones, error) {
	t.reading.Lock()
	defer t.reading.Unlock()
	if held := t.held.Load(); !force && held != nil && time.Since(held.began) < t.lease {
		return held, nil
	}
	began := time.Now()
	es, err := t.journal.AllErasures(ctx)
	if err != nil {
		return nil, err
	}
	return t.hold(began, es), nil
}

// hold holds es's pending erasures, found by a read of the journal begun at
// began, unless a later read's are held.
func (t *tombstones) hold(began time.Time, es []erasure.Erasure) *heldTombstones {
	hashes := map[string][]string{}
	for _, e := range es {
		if e.State == erasure.StatePending {
			hashes[e.Account] = append(hashes[e.Account], e.Hashes...)
		}
	}
	held := &heldTombstones{began: began, byAccount: make(map[string]*domain.HiddenSubjects, len(hashes))}
	for account, hs := range hashes {
		if hidden := domain.HiddenSubjectsOf(hs); hidden != nil {
			held.byAccount[account] = hidden
		}
	}
	for {
		old := t.held.Load()
		if old != nil && old.began.After(began) {
			return old
		}
		if t.held.CompareAndSwap(old, held) {
			return held
		}
	}
}

// add makes this replica's reads leave e's subjects out at once, before
// the journal is read again.
func (t *tombstones) add(e erasure.Erasure) {
	if t == nil || len(e.Hashes) == 0 {
		return
	}
	for {
		old := t.held.Load()
		if old == nil {
			return // the first read of the journal finds e
		}
		held := &heldTombstones{began: old.began, byAccount: maps.Clone(old.byAccount)}
		var hs []string
		if h := held.byAccount[e.Account]; h != nil {
			hs = h.Hashes
		}
		held.byAccount[e.Account] = domain.HiddenSubjectsOf(hs, e.Hashes)
		if t.held.CompareAndSwap(old, held) {
			return
		}
	}
}

// waitLease waits until every replica's reads leave out an erasure
// journaled before the call: the lease.
func (t *tombstones) waitLease(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return waitFor(ctx, t.lease)
}

// waitFor waits d, or until ctx is done.
func waitFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// hides reports whether account's message id is left out now, by its
// subjects in the store's subject index.
func (t *tombstones) hides(ctx context.Context, account, id string) (bool, error) {
	hidden, err := t.of(ctx, account)
	if err != nil || hidden == nil {
		return false, err
	}
	_, hashes, err := t.eraser.MessageSubjects(ctx, account, id)
	if errors.Is(err, ports.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("the message's subjects: %w", err)
	}
	return hidden.Hides(hashes), nil
}

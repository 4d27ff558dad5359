package app

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/reqlog/reqlog/ports"
)

// AdmissionOptions bound the submissions being read and decoded at once. Decoding
// is the CPU-heavy part of ingest: without a bound, twice the load a machine can
// decode makes every request slow, refusals included. With it, excess submissions
// are refused at once, before their body is read.
type AdmissionOptions struct {
	// Decoders is how many submissions may be read and decoded at the same time;
	// 0 or less: no limit (and no waiting room).
	Decoders int
	// MaxWaiting is how many more may wait for a decoder; beyond that a submission
	// is refused with ports.ErrOverloaded without waiting.
	MaxWaiting int
}

// DefaultAdmissionOptions: four decoders per core, so reading a body from a slow
// client does not idle a core, and a waiting room of 256 submissions, so a
// closed-loop client with a few hundred connections is slowed, not refused.
func DefaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{Decoders: 4 * runtime.GOMAXPROCS(0), MaxWaiting: 256}
}

// admission is a counting semaphore with a bounded waiting room.
type admission struct {
	slots      chan struct{} // nil: unlimited
	waiting    atomic.Int64
	maxWaiting int64
}

func newAdmission(o AdmissionOptions) *admission {
	if o.Decoders <= 0 {
		return &admission{}
	}
	return &admission{slots: make(chan struct{}, o.Decoders), maxWaiting: int64(max(o.MaxWaiting, 0))}
}

// acquire takes a decoder, waiting for one only while the waiting room has space.
// The returned release is safe to call more than once.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	if a.slots == nil {
		return func() {}, nil
	}
	select {
	case a.slots <- struct{}{}:
		return a.releaser(), nil
	default:
	}
	if a.waiting.Add(1) > a.maxWaiting {
		a.waiting.Add(-1)
		return nil, fmt.Errorf("%d submissions are already waiting to be decoded: %w", a.maxWaiting, ports.ErrOverloaded)
	}
	defer a.waiting.Add(-1)
	select {
	case a.slots <- struct{}{}:
		return a.releaser(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to decode a submission: %w: %w", ports.ErrUnavailable, ctx.Err())
	}
}

func (a *admission) releaser() func() {
	var released atomic.Bool
	return func() {
		if released.CompareAndSwap(false, true) {
			<-a.slots
		}
	}
}

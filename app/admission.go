package app

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/reqlog/reqlog/ports"
)

// AdmissionOptions bound the submissions admitted and not yet decoded, and those
// decoded at once. Decoding is the CPU-heavy part of ingest: without a bound,
// twice the load a machine can decode makes every request slow, refusals
// included. With it, excess submissions are refused at once, before their body is
// read.
type AdmissionOptions struct {
	// Decoders is how many submissions may be decoded at the same time; 0 or
	// less: no limit (and no bound on admitted submissions either). Bodies are
	// read before a decoder is taken, so a slow client holds none.
	Decoders int
	// MaxWaiting is how many more submissions may be admitted, to have their body
	// read or to wait for a decoder; beyond that a submission is refused with
	// ports.ErrOverloaded from its headers.
	MaxWaiting int
}

// DefaultAdmissionOptions: one decoder per core, since a decoder only computes,
// and room for 256 more submissions being read or waiting, so a closed-loop client
// with a few hundred connections is slowed, not refused. More decoders than cores
// only lengthen the run queue that every request, refusals included, waits in
// (docs/benchmarks.md).
func DefaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{Decoders: runtime.GOMAXPROCS(0), MaxWaiting: 256}
}

// admission counts the submissions admitted and not yet decoded, and is a
// counting semaphore of decoders.
type admission struct {
	decoders    chan struct{} // nil: unlimited
	admitted    atomic.Int64
	maxAdmitted int64
}

func newAdmission(o AdmissionOptions) *admission {
	if o.Decoders <= 0 {
		return &admission{}
	}
	return &admission{decoders: make(chan struct{}, o.Decoders),
		maxAdmitted: int64(o.Decoders) + int64(max(o.MaxWaiting, 0))}
}

// admit counts a submission in, or refuses it at once when as many as the
// decoders and the waiting room hold are admitted and not yet decoded. The
// returned leave, safe to call more than once, counts it out.
func (a *admission) admit() (leave func(), err error) {
	if a.decoders == nil {
		return func() {}, nil
	}
	if a.admitted.Add(1) > a.maxAdmitted {
		a.admitted.Add(-1)
		return nil, fmt.Errorf("%d submissions are already being read or waiting to be decoded: %w",
			a.maxAdmitted, ports.ErrOverloaded)
	}
	return sync.OnceFunc(func() { a.admitted.Add(-1) }), nil
}

// decoder waits for a decoder; the returned release is safe to call more than once.
func (a *admission) decoder(ctx context.Context) (release func(), err error) {
	if a.decoders == nil {
		return func() {}, nil
	}
	select {
	case a.decoders <- struct{}{}:
		return sync.OnceFunc(func() { <-a.decoders }), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to decode a submission: %w: %w", ports.ErrUnavailable, ctx.Err())
	}
}

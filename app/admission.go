package app

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// AdmissionOptions bound the submissions admitted and not yet decoded, and those
// decoded at once. Decoding is the CPU-heavy part of ingest: without a bound,
// twice the load a machine can decode makes every request slow, refusals
// included. With it, excess submissions are refused at once, before their body is
// read.
type AdmissionOptions struct {
	// Decoders is how many submissions may be decoded at the same time, one
	// fewer (if more than one) for a second after a submission was refused for
	// load; 0 or less: no limit, and no bound on admitted submissions either.
	// Bodies are read before a decoder is taken, so a slow client holds none.
	Decoders int
	// MaxWaiting is how many more submissions may be admitted, to have their body
	// read or to wait for a decoder; beyond that a submission is refused with
	// ports.ErrOverloaded from its headers.
	MaxWaiting int
	// MaxBytes bounds the bodies of the submissions admitted and not yet decoded,
	// by their declared length (a chunked body: the body limit, until it is read),
	// so the bodies being read fit in memory. Beyond it a submission is refused
	// like beyond MaxWaiting, unless none is admitted. 0 or less:
	// DefaultAdmissionBytes. It applies only without a queue: an Ingester that
	// writes through a GroupCommitter reserves each body in the queue instead,
	// whose bound is then the one byte budget.
	MaxBytes int64
}

// DefaultAdmissionBytes is the default of AdmissionOptions.MaxBytes: the group
// commit queue's default, so the bodies being read take at most as much memory as
// the messages waiting for the store.
const DefaultAdmissionBytes = DefaultGroupQueueBytes

// DefaultAdmissionOptions: one decoder per core, since a decoder only computes,
// and room for 256 more submissions being read or waiting, so a closed-loop client
// with a few hundred connections is slowed, not refused. More decoders than cores
// only lengthen the run queue that every request, refusals included, waits in
// (docs/benchmarks.md).
func DefaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{Decoders: runtime.GOMAXPROCS(0), MaxWaiting: 256, MaxBytes: DefaultAdmissionBytes}
}

// admission bounds the submissions admitted and not yet decoded, in number and
// in body bytes, and is a counting semaphore of decoders.
type admission struct {
	decoders chan struct{} // nil: unlimited
	// spared: while submissions are being refused, a decoder also takes one of
	// these, one fewer than the decoders, so that a core stays free to read
	// requests and answer refusals. Decoding faster is of no use then: the
	// store or the CPU is saturated. nil with one decoder.
	spared      chan struct{}
	lastRefusal atomic.Int64 // UnixNano
	maxAdmitted int64
	maxBytes    int64

	mu       sync.Mutex
	admitted int64
	bytes    int64
}

func newAdmission(o AdmissionOptions) *admission {
	if o.Decoders <= 0 {
		return &admission{}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultAdmissionBytes
	}
	a := &admission{decoders: make(chan struct{}, o.Decoders),
		maxAdmitted: int64(o.Decoders) + int64(max(o.MaxWaiting, 0)), maxBytes: o.MaxBytes}
	if o.Decoders > 1 {
		a.spared = make(chan struct{}, o.Decoders-1)
	}
	return a
}

// refusingWindow is how long after a refusal decoding spares a core.
const refusingWindow = time.Second

// refused notes that a submission was just refused for load.
func (a *admission) refused() { a.lastRefusal.Store(time.Now().UnixNano()) }

func (a *admission) refusing() bool {
	return time.Now().UnixNano()-a.lastRefusal.Load() < int64(refusingWindow)
}

// ticket is one admitted submission; admission.mu guards its fields.
type ticket struct {
	a     *admission
	bytes int64
	left  bool
}

// admit counts in a submission whose body has at most bodyBytes, or refuses it
// at once when the decoders and the waiting room are taken, or when its body
// does not fit beside the others admitted and not yet decoded.
func (a *admission) admit(bodyBytes int64) (*ticket, error) {
	t := &ticket{a: a, bytes: max(bodyBytes, 0)}
	if a.decoders == nil {
		t.left = true // nothing to count
		return t, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admitted >= a.maxAdmitted || (a.admitted > 0 && a.bytes+t.bytes > a.maxBytes) {
		a.refused()
		return nil, fmt.Errorf("%d submissions (%d bytes) are already being read or waiting to be decoded: %w",
			a.admitted, a.bytes, ports.ErrOverloaded)
	}
	a.admitted++
	a.bytes += t.bytes
	return t, nil
}

// bodyRead counts the body as the n bytes it turned out to have, if fewer.
func (t *ticket) bodyRead(n int64) {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if !t.left && n < t.bytes {
		t.a.bytes -= t.bytes - n
		t.bytes = n
	}
}

// leave counts the submission out; a second call does nothing.
func (t *ticket) leave() {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if !t.left {
		t.left = true
		t.a.admitted--
		t.a.bytes -= t.bytes
	}
}

// decoder waits for a decoder, and while submissions are being refused for one
// of the spared ones too; the returned release is safe to call more than once.
func (a *admission) decoder(ctx context.Context) (release func(), err error) {
	if a.decoders == nil {
		return func() {}, nil
	}
	if a.spared != nil && a.refusing() {
		if err := take(ctx, a.spared); err != nil {
			return nil, err
		}
		if err := take(ctx, a.decoders); err != nil {
			<-a.spared
			return nil, err
		}
		return sync.OnceFunc(func() { <-a.decoders; <-a.spared }), nil
	}
	if err := take(ctx, a.decoders); err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { <-a.decoders }), nil
}

// take waits for a slot of slots.
func take(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting to decode a submission: %w: %w", ports.ErrUnavailable, ctx.Err())
	}
}

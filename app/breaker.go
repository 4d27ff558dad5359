package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Breaker is a ports.MessageWriter in front of another (the queue or the store)
// that stops calling it while the store is down. Once the latest call to be let
// through found the store unavailable, one call at a time probes it, and the
// others fail at once with ports.ErrUnavailable instead of each waiting out the
// store's timeout, until a probe reaches the store. A store that is only busy
// (ports.ErrOverloaded) is not down, and a caller that went away says nothing
// about the store.
//
// The ingest use case also calls it directly: Refusing at admission, so a
// request is refused from its headers; Enter before an Idempotency-Key lookup,
// which calls the store too and so must be the probe, or wait for none.
type Breaker struct {
	next ports.MessageWriter

	mu       sync.Mutex
	down     bool   // the latest call to settle found the store unavailable
	probing  bool   // while down, a pass is out as the probe
	entered  uint64 // passes given, numbering them
	settled  uint64 // the number of the latest pass whose outcome set down
	lastDown error  // why it is down, for the refusals
}

var _ ports.MessageWriter = (*Breaker)(nil)

// NewBreaker returns a breaker in front of next, which it takes to be up.
func NewBreaker(next ports.MessageWriter) *Breaker { return &Breaker{next: next} }

// Append passes msgs to the next writer unless the breaker refuses it (see Enter).
func (b *Breaker) Append(ctx context.Context, msgs []domain.Message) error {
	pass, err := b.Enter()
	if err != nil {
		return err
	}
	err = b.next.Append(ctx, msgs)
	pass.Done(err)
	return err
}

// Refusing returns an error wrapping ports.ErrUnavailable while the store is
// down and a probe is under way, and nil otherwise; it claims nothing, so a slow
// upload admitted meanwhile does not hold the others off.
func (b *Breaker) Refusing() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refusing()
}

// refusing is Refusing with b.mu held.
func (b *Breaker) refusing() error {
	if b.down && b.probing {
		// %w twice: a ports.Fault in why it is down still names what is damaged.
		return fmt.Errorf("the store was found unavailable (%w), and a request probing it is under way: %w",
			b.lastDown, ports.ErrUnavailable)
	}
	return nil
}

// Enter lets one call (one or more store calls for one request) through: while
// the store is down it becomes the probe, or fails at once with an error wrapping
// ports.ErrUnavailable when another call is the probe. The pass ends with Done.
func (b *Breaker) Enter() (*Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return nil, err
	}
	b.entered++
	p := &Pass{b: b, number: b.entered, probe: b.down}
	if p.probe {
		b.probing = true
	}
	return p, nil
}

// Pass is one call let through by a Breaker.
type Pass struct {
	b      *Breaker
	number uint64
	probe  bool
	done   bool
}

// Done reports the call's outcome: nil, or an error that did not find the store
// unavailable, means it is up; one of kind ports.KindUnavailable means it is down.
// Only the latest pass to be given says how the store is: an older call may
// finish after a newer one. A caller that went away tells nothing. A second
// Done, or Done on a nil Pass, does nothing.
//
// Defer Abandon too: a call that panics must not leave the probe claimed.
func (p *Pass) Done(err error) {
	if p == nil {
		return
	}
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	if p.probe {
		b.probing = false
	}
	kind := ports.KindOf(err)
	if kind == ports.KindCanceled || p.number <= b.settled {
		return
	}
	b.settled = p.number
	b.down = kind == ports.KindUnavailable
	if b.down {
		b.lastDown = err
	}
}

// Abandon ends the pass without an outcome, as a caller that went away does;
// after Done, or on a nil Pass, it does nothing.
func (p *Pass) Abandon() { p.Done(context.Canceled) }

package app

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/reqlog/reqlog/ports"
)

// WalkLimits share the reads that walk many messages (statistics, export pages,
// lists with q or a filter not every store orders by) fairly between accounts,
// whatever the store. A walk costs a store a core, or a database a query, for
// up to seconds: without a bound per account, one account (or one customer's
// portal session, which reads as its account) could keep every walk busy and
// every other account's reads would wait behind it.
type WalkLimits struct {
	// Walks is how many walks may run at once in the process; 0: no limit
	// (and no other bound either).
	Walks int
	// PerAccount is how many of them one account may run at once. Below Walks,
	// one account always leaves a walk to the others.
	PerAccount int
	// MaxWaiting is how many more of one account's walks may wait for a turn;
	// beyond that a walk is refused with ports.ErrOverloaded (HTTP 429 with
	// Retry-After), so an account cannot park unbounded requests either.
	MaxWaiting int
}

// DefaultWalkLimits: a walk per core, at least two, and half of them per
// account, so that one account uses at most half the cores for its walks and
// another's walk starts at once. A walk keeps a core busy, so more walks than
// cores only share the cores and finish later.
func DefaultWalkLimits() WalkLimits {
	walks := max(2, runtime.GOMAXPROCS(0))
	return WalkLimits{Walks: walks, PerAccount: walks / 2, MaxWaiting: 16}
}

// problem names the first unusable field and why, or returns "".
func (l WalkLimits) problem() (field, reason string) {
	switch {
	case l.Walks < 0:
		return "Walks", "must not be negative (0 turns the limit off)"
	case l.Walks > 0 && (l.PerAccount < 1 || l.PerAccount > l.Walks):
		return "PerAccount", fmt.Sprintf("must be from 1 to the walks at once (%d)", l.Walks)
	case l.MaxWaiting < 0:
		return "MaxWaiting", "must not be negative"
	}
	return "", ""
}

// walkAdmission admits walks under WalkLimits. A walk that cannot start waits in
// its account's line; when a walk ends, the next to start is the first walk of
// the account that has waited longest since its last start (round robin
// between accounts), so an account's waiting walks never hold back another
// account's for more than one of theirs.
type walkAdmission struct {
	limits WalkLimits

	mu       sync.Mutex
	running  int
	accounts map[string]*accountWalks
	turns    []*accountWalks // accounts with walks waiting, next to start first
}

// accountWalks are one account's walks; walkAdmission.mu guards them.
type accountWalks struct {
	name    string
	running int
	waiting []chan struct{} // in arrival order; closed once admitted
}

func newWalkAdmission(limits WalkLimits) *walkAdmission {
	return &walkAdmission{limits: limits, accounts: map[string]*accountWalks{}}
}

// admit starts a walk of account, at once or once its turn comes, and returns
// the function that ends it. It fails with ports.ErrOverloaded when the
// account already has MaxWaiting walks waiting, and with ctx's error if ctx
// ends first.
func (w *walkAdmission) admit(ctx context.Context, account string) (release func(), err error) {
	if w.limits.Walks <= 0 {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting for a turn to read: %w", err)
	}
	w.mu.Lock()
	a := w.accounts[account]
	if a == nil {
		a = &accountWalks{name: account}
		w.accounts[account] = a
	}
	if len(a.waiting) == 0 && w.canStart(a) {
		w.start(a)
		w.mu.Unlock()
		return w.releaser(a), nil
	}
	if len(a.waiting) >= w.limits.MaxWaiting {
		w.forgetIfIdle(a)
		w.mu.Unlock()
		return nil, fmt.Errorf("%d reads of this account are already waiting for a turn: %w", w.limits.MaxWaiting, ports.ErrOverloaded)
	}
	admitted := make(chan struct{})
	if a.waiting = append(a.waiting, admitted); len(a.waiting) == 1 {
		w.turns = append(w.turns, a)
	}
	w.mu.Unlock()

	select {
	case <-admitted:
		return w.releaser(a), nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-admitted: // admitted meanwhile: hand the turn on
		w.end(a)
	default:
		w.leaveLine(a, admitted)
	}
	return nil, fmt.Errorf("waiting for a turn to read: %w", ctx.Err())
}

func (w *walkAdmission) canStart(a *accountWalks) bool {
	return w.running < w.limits.Walks && a.running < w.limits.PerAccount
}

func (w *walkAdmission) start(a *accountWalks) {
	w.running++
	a.running++
}

// releaser ends a's walk once, however often it is called.
func (w *walkAdmission) releaser(a *accountWalks) func() {
	return sync.OnceFunc(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.end(a)
	})
}

// end ends one of a's walks and starts the waiting walks that may now start.
func (w *walkAdmission) end(a *accountWalks) {
	w.running--
	a.running--
	w.forgetIfIdle(a)
	for w.running < w.limits.Walks {
		i := 0
		for i < len(w.turns) && !w.canStart(w.turns[i]) {
			i++
		}
		if i == len(w.turns) {
			return // every account waiting is at its own bound
		}
		next := w.turns[i]
		w.turns = append(w.turns[:i], w.turns[i+1:]...)
		close(next.waiting[0])
		next.waiting = next.waiting[1:]
		w.start(next)
		if len(next.waiting) > 0 {
			w.turns = append(w.turns, next) // its next walk waits for the others' turns
		}
	}
}

// leaveLine removes a walk that gave up waiting from a's line.
func (w *walkAdmission) leaveLine(a *accountWalks, admitted chan struct{}) {
	for i, c := range a.waiting {
		if c == admitted {
			a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
			break
		}
	}
	if len(a.waiting) == 0 {
		for i, t := range w.turns {
			if t == a {
				w.turns = append(w.turns[:i], w.turns[i+1:]...)
				break
			}
		}
	}
	w.forgetIfIdle(a)
}

// forgetIfIdle drops an account with nothing running or waiting, so that the
// map holds only accounts that read right now.
func (w *walkAdmission) forgetIfIdle(a *accountWalks) {
	if a.running == 0 && len(a.waiting) == 0 {
		delete(w.accounts, a.name)
	}
}

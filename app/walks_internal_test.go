package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// waitUntil polls cond until it holds or a deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		case <-poll.C:
		}
	}
}

func (w *walkAdmission) waitingOf(account string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.accounts[account]; a != nil {
		return len(a.waiting)
	}
	return 0
}

// admitted is a walk asked for in the background: its release once admitted.
type admitted struct {
	account string
	release chan func()
	err     chan error
}

func admitLater(w *walkAdmission, ctx context.Context, account string) admitted {
	a := admitted{account: account, release: make(chan func(), 1), err: make(chan error, 1)}
	go func() {
		release, err := w.admit(ctx, account)
		if err != nil {
			a.err <- err
			return
		}
		a.release <- release
	}()
	return a
}

func mustAdmit(t *testing.T, w *walkAdmission, account string) func() {
	t.Helper()
	release, err := w.admit(t.Context(), account)
	if err != nil {
		t.Fatalf("admit %s: %v", account, err)
	}
	return release
}

// An account at its own bound waits; another account's walk starts at once.
func TestAnAccountAtItsBoundLeavesTheOthersTheirWalk(t *testing.T) {
	w := newWalkAdmission(WalkLimits{Walks: 2, PerAccount: 1, MaxWaiting: 4})
	releaseA := mustAdmit(t, w, "a")
	second := admitLater(w, t.Context(), "a")
	waitUntil(t, "a's second walk waits", func() bool { return w.waitingOf("a") == 1 })
	releaseB := mustAdmit(t, w, "b") // does not wait behind a
	select {
	case <-second.release:
		t.Fatal("a ran two walks at once with PerAccount 1")
	default:
	}
	releaseA()
	(<-second.release)()
	releaseB()
	releaseA() // a second call does nothing
	if w.running != 0 || len(w.accounts) != 0 || len(w.turns) != 0 {
		t.Errorf("after every walk ended: %d running, %d accounts, %d turns", w.running, len(w.accounts), len(w.turns))
	}
}

// With every walk taken, the next free walk goes to the account that waited
// longest since its last start: b's one waiting walk is not held back by all
// of a's.
func TestWaitingAccountsTakeTurns(t *testing.T) {
	w := newWalkAdmission(WalkLimits{Walks: 1, PerAccount: 1, MaxWaiting: 4})
	release := mustAdmit(t, w, "a")
	type start struct {
		account string
		release func()
	}
	started := make(chan start)
	accounts := []string{"a", "a", "a", "b"}
	for i, account := range accounts {
		go func() {
			release, err := w.admit(t.Context(), account)
			if err != nil {
				t.Error(err)
				return
			}
			started <- start{account, release}
		}()
		waitUntil(t, "the walk waits", func() bool { return w.waitingOf("a")+w.waitingOf("b") == i+1 })
	}
	var order []string
	for range accounts {
		release()
		select {
		case s := <-started:
			order, release = append(order, s.account), s.release
		case <-time.After(10 * time.Second):
			t.Fatalf("no walk started after one ended; started so far: %v", order)
		}
	}
	release()
	if want := []string{"a", "b", "a", "a"}; !slices.Equal(order, want) {
		t.Errorf("walks started in the order %v, want %v", order, want)
	}
}

// Beyond MaxWaiting an account's walk is refused as overload; one that gives up
// waiting leaves the line, and the bounds still hold afterwards.
func TestWaitingIsBoundedAndCanBeAbandoned(t *testing.T) {
	w := newWalkAdmission(WalkLimits{Walks: 2, PerAccount: 1, MaxWaiting: 1})
	release := mustAdmit(t, w, "a")
	ctx, cancel := context.WithCancel(t.Context())
	waiting := admitLater(w, ctx, "a")
	waitUntil(t, "a's second walk waits", func() bool { return w.waitingOf("a") == 1 })
	if _, err := w.admit(t.Context(), "a"); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("a third walk with MaxWaiting 1: %v, want ErrOverloaded", err)
	}
	cancel()
	if err := <-waiting.err; !errors.Is(err, context.Canceled) {
		t.Errorf("a walk whose context ended while waiting: %v, want context.Canceled", err)
	}
	if w.waitingOf("a") != 0 || len(w.turns) != 0 {
		t.Errorf("the abandoned walk is still in line")
	}
	release()
	mustAdmit(t, w, "a")()
	if _, err := w.admit(ctx, "b"); !errors.Is(err, context.Canceled) {
		t.Errorf("admit with an ended context: %v, want context.Canceled", err)
	}
	if w.running != 0 || len(w.accounts) != 0 {
		t.Errorf("after every walk ended: %d running, %d accounts", w.running, len(w.accounts))
	}
}

// Walks 0 admits everything at once.
func TestNoWalkLimit(t *testing.T) {
	w := newWalkAdmission(WalkLimits{})
	for range 100 {
		mustAdmit(t, w, "a")
	}
}

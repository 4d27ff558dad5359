package memory

import (
	"context"
	"sync"
	"time"
)

// leases is ports.Leases in memory: the alert store's and the erasure
// journal's, so that cores sharing one (replicas in a test) take turns.
type leases struct {
	mu   sync.Mutex
	held map[string]lease
}

type lease struct {
	owner string
	until time.Time
}

// AcquireLease takes or renews a lease.
func (l *leases) AcquireLease(_ context.Context, name, owner string, now, until time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[name]; ok && h.owner != owner && h.until.After(now) {
		return false, nil
	}
	if l.held == nil {
		l.held = map[string]lease{}
	}
	l.held[name] = lease{owner: owner, until: until}
	return true, nil
}

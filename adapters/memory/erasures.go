package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.ErasureJournal = (*ErasureJournal)(nil)
	_ ports.Leases         = (*ErasureJournal)(nil)
)

// ErasureJournal is the in-memory ports.ErasureJournal, kept until the
// process ends, with the erasure job's lease.
type ErasureJournal struct {
	mu       sync.Mutex
	erasures map[string]map[string]erasure.Erasure // by account, then id
	leases
}

// NewErasureJournal returns an empty journal.
func NewErasureJournal() *ErasureJournal {
	return &ErasureJournal{erasures: map[string]map[string]erasure.Erasure{}}
}

func copyErasure(e erasure.Erasure) erasure.Erasure {
	e.Hashes = slices.Clone(e.Hashes)
	return e
}

// SaveErasure writes a copy of e.
func (j *ErasureJournal) SaveErasure(_ context.Context, e erasure.Erasure) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.erasures[e.Account] == nil {
		j.erasures[e.Account] = map[string]erasure.Erasure{}
	}
	j.erasures[e.Account][e.ID] = copyErasure(e)
	return nil
}

// Erasure returns account's erasure id.
func (j *ErasureJournal) Erasure(_ context.Context, account, id string) (erasure.Erasure, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.erasures[account][id]
	if !ok {
		return erasure.Erasure{}, fmt.Errorf("memory: erasure %q: %w", id, ports.ErrNotFound)
	}
	return copyErasure(e), nil
}

// Erasures returns account's erasures before the id before, newest first.
func (j *ErasureJournal) Erasures(_ context.Context, account, before string, limit int) ([]erasure.Erasure, error) {
	j.mu.Lock()
	var out []erasure.Erasure
	for id, e := range j.erasures[account] {
		if before == "" || id < before {
			out = append(out, copyErasure(e))
		}
	}
	j.mu.Unlock()
	erasure.SortNewestFirst(out)
	return out[:min(len(out), limit)], nil
}

// AllErasures returns every account's erasures.
func (j *ErasureJournal) AllErasures(context.Context) ([]erasure.Erasure, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []erasure.Erasure
	for _, byID := range j.erasures {
		for _, e := range byID {
			out = append(out, copyErasure(e))
		}
	}
	return out, nil
}

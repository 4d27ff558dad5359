package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.Eraser         = (*Store)(nil)
	_ ports.TallyEraser    = (*Store)(nil)
	_ ports.SubjectIndexer = (*Store)(nil)
)

// subjectIndex is the subject index: by account, each subject hash's
// message ids, and each message's hashes (for removing it).
type subjectIndex map[string]*accountSubjects

type accountSubjects struct {
	byHash map[string]map[string]struct{}
	byID   map[string][]string
}

// add indexes id under hashes, in account.
func (x subjectIndex) add(account, id string, hashes []string) {
	if len(hashes) == 0 {
		return
	}
	a := x[account]
	if a == nil {
		a = &accountSubjects{byHash: map[string]map[string]struct{}{}, byID: map[string][]string{}}
		x[account] = a
	}
	a.byID[id] = slices.Clone(hashes)
	for _, h := range hashes {
		if a.byHash[h] == nil {
			a.byHash[h] = map[string]struct{}{}
		}
		a.byHash[h][id] = struct{}{}
	}
}

// remove forgets id's entries.
func (x subjectIndex) remove(account, id string) {
	a := x[account]
	if a == nil {
		return
	}
	for _, h := range a.byID[id] {
		delete(a.byHash[h], id)
		if len(a.byHash[h]) == 0 {
			delete(a.byHash, h)
		}
	}
	delete(a.byID, id)
	if len(a.byID) == 0 {
		delete(x, account)
	}
}

// subjectsOf is what the subject index holds of account's message id (a
// copy: an index may change it once the lock is let go).
func (s *Store) subjectsOf(account, id string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if a := s.subjects[account]; a != nil {
		return slices.Clone(a.byID[id])
	}
	return nil
}

// SubjectMessages returns the messages of q's account indexed under its
// hashes, newest first.
func (s *Store) SubjectMessages(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: subject messages: %w", err)
	}
	s.mu.RLock()
	var refs []ports.SubjectRef
	if a := s.subjects[q.Account]; a != nil {
		seen := map[string]bool{}
		for _, h := range q.Hashes {
			for id := range a.byHash[h] {
				if seen[id] {
					continue
				}
				seen[id] = true
				m, ok := s.find(id)
				if ok && !m.Tally && selects(q, m) {
					refs = append(refs, ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt})
				}
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(refs, func(a, b ports.SubjectRef) int {
		if domain.Precedes(at(a.Cursor()), at(b.Cursor())) {
			return -1
		}
		return 1
	})
	return refs[:min(len(refs), q.Limit)], nil
}

// MessageSubjects finds account's message id and its subject hashes.
func (s *Store) MessageSubjects(ctx context.Context, account, id string) (ports.SubjectRef, []string, error) {
	if err := ctx.Err(); err != nil {
		return ports.SubjectRef{}, nil, fmt.Errorf("memory: message subjects: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.find(id)
	if !ok || m.Account != account {
		return ports.SubjectRef{}, nil, fmt.Errorf("memory: message %q: %w", id, ports.ErrNotFound)
	}
	var hashes []string
	if a := s.subjects[account]; a != nil {
		hashes = slices.Clone(a.byID[id])
	}
	return ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt}, hashes, nil
}

// IndexSubjects adds each entry's hashes to its message's.
func (s *Store) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: index subjects: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found int64
	for _, e := range entries {
		m, ok := s.find(e.Ref.ID)
		if !ok || m.Account != account {
			continue
		}
		found++
		var held []string
		if a := s.subjects[account]; a != nil {
			held = a.byID[m.ID]
		}
		s.subjects.add(account, m.ID, slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(held), e.Hashes...)))))
	}
	return found, nil
}

// selects reports whether q selects m, which its index found.
func selects(q ports.SubjectQuery, m domain.Message) bool {
	return (q.Domain == "" || m.Domain == q.Domain) &&
		(q.CreatedBefore.IsZero() || !m.CreatedAt.After(q.CreatedBefore)) &&
		(q.After == nil || domain.Precedes(at(*q.After), m))
}

// Hide gives each message of refs the expiry erasure.HiddenExpiry.
func (s *Store) Hide(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: hide: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var hidden int64
	for _, r := range refs {
		m, ok := s.find(r.ID)
		if !ok || m.Account != account {
			continue
		}
		if !m.ExpiresAt.Equal(erasure.HiddenExpiry) {
			s.expires.Delete(expiry{expires: m.ExpiresAt, id: m.ID})
			m.ExpiresAt = erasure.HiddenExpiry
			s.scopes[m.Scope()].all.ReplaceOrInsert(m) // a new value: copies taken before keep theirs
			s.expires.ReplaceOrInsert(expiry{expires: m.ExpiresAt, id: m.ID})
		}
		hidden++
	}
	return hidden, nil
}

// Delete forgets the messages of refs.
func (s *Store) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: delete: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var deleted int64
	for _, r := range refs {
		if m, ok := s.find(r.ID); ok && m.Account == account {
			s.remove(r.ID)
			deleted++
		}
	}
	return deleted, nil
}

// EraseTallies forgets the tallies of q's account indexed under its hashes
// that its Domain and CreatedBefore select.
func (s *Store) EraseTallies(ctx context.Context, q ports.SubjectQuery) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: erase tallies: %w", err)
	}
	q.After = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	var erased []string
	if a := s.subjects[q.Account]; a != nil {
		for _, h := range q.Hashes {
			for id := range a.byHash[h] {
				if m, ok := s.find(id); ok && m.Tally && selects(q, m) && !slices.Contains(erased, id) {
					erased = append(erased, id)
				}
			}
		}
	}
	for _, id := range erased {
		s.remove(id)
	}
	return int64(len(erased)), nil
}

// Expunge has nothing to do: a deleted message is garbage for Go's
// collector.
func (s *Store) Expunge(context.Context) error { return nil }

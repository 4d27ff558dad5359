package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.MessageRewriter = (*Store)(nil)

// ScanForRewrite returns q's messages oldest first: the scope's tree walked
// backwards from q.After (or from q.From), under the read lock.
func (s *Store) ScanForRewrite(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: scan: %w", err)
	}
	// In List order (newest first) the oldest position at From is (From, ""):
	// every message created at From has a larger id.
	start := domain.Cursor{CreatedAt: q.From}
	if q.After != nil && !q.After.CreatedAt.Before(q.From) {
		start = *q.After
	}
	var found []domain.Message
	s.mu.RLock()
	if idx := s.scopes[q.Scope]; idx != nil {
		idx.all.DescendLessOrEqual(at(start), func(m domain.Message) bool {
			if !m.CreatedAt.Before(q.To) {
				return false
			}
			if q.After != nil && m.ID == start.ID && m.CreatedAt.Equal(start.CreatedAt) {
				return true
			}
			if !m.Tally && (len(q.Names) == 0 || slices.Contains(q.Names, m.Name)) { // a re-scrub leaves tallies as ingest scrubbed them
				found = append(found, m)
			}
			return len(found) < q.Limit
		})
	}
	s.mu.RUnlock()
	for i := range found {
		found[i] = found[i].Clone()
	}
	return found, nil
}

// RewriteMessages replaces each stored message's scrubbable fields with a
// new stored value (stored messages are never changed in place: copies
// handed out share them).
func (s *Store) RewriteMessages(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: rewrite: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		stored, ok := s.find(m.ID)
		if !ok || stored.Scope() != m.Scope() {
			continue
		}
		stored.IPAddress, stored.Path, stored.Rules = m.IPAddress, m.Path, m.Rules.Clone()
		stored.Request.Header, stored.Request.Body = m.Request.Header.Clone(), m.Request.Body
		stored.Response.Header, stored.Response.Body = m.Response.Header.Clone(), m.Response.Body
		s.scopes[stored.Scope()].all.ReplaceOrInsert(stored)
	}
	return nil
}

// ExpungeRewritten has nothing to do: a replaced message is garbage the
// runtime reclaims.
func (s *Store) ExpungeRewritten(context.Context, time.Time, time.Time) error { return nil }

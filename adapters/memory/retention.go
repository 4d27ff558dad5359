package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RetentionPurger = (*Store)(nil)

// classify notes m in its retention class, under the write lock.
func (s *Store) classify(m domain.Message) {
	class := m.RetentionClass()
	if class == (domain.RetentionClass{}) {
		return
	}
	ids := s.classes[class]
	if ids == nil {
		ids = map[string]struct{}{}
		s.classes[class] = ids
	}
	ids[m.ID] = struct{}{}
}

// declassify forgets m's place in its class, under the write lock.
func (s *Store) declassify(m domain.Message) {
	class := m.RetentionClass()
	if ids := s.classes[class]; ids != nil {
		delete(ids, m.ID)
		if len(ids) == 0 {
			delete(s.classes, class)
		}
	}
}

// PurgeRetention purges what has expired (PurgeExpired), then, class by
// class, the messages created longer than the class's current keep before
// now, and takes out the bodies of those past its current bodies retention.
func (s *Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	purged, err := s.PurgeExpired(ctx, now)
	if err != nil {
		return purged, err
	}
	var errs []error // a class current cannot tell of holds back no other
	for _, class := range s.classList() {
		if err := ctx.Err(); err != nil {
			return purged, fmt.Errorf("memory: purge: %w", err)
		}
		keep, bodies, ok, err := current(ctx, class)
		if err != nil {
			errs = append(errs, fmt.Errorf("memory: purge: the retention of %s's rule %s: %w", class.Account, class.Rule, err))
			continue
		}
		if ok {
			purged += int64(s.purgeClass(class, now.Add(-keep), now.Add(-bodies)))
		}
	}
	return purged, errors.Join(errs...)
}

func (s *Store) classList() []domain.RetentionClass {
	s.mu.RLock()
	defer s.mu.RUnlock()
	classes := make([]domain.RetentionClass, 0, len(s.classes))
	for class := range s.classes {
		classes = append(classes, class)
	}
	return classes
}

// purgeClass removes class's messages created at or before keptFrom and
// replaces those created at or before bodiesFrom with copies without
// bodies (stored messages are never changed in place); it returns how many
// it removed.
func (s *Store) purgeClass(class domain.RetentionClass, keptFrom, bodiesFrom time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := 0
	for id := range s.classes[class] {
		m, ok := s.find(id)
		switch {
		case !ok:
		case !m.CreatedAt.After(keptFrom):
			s.keepRollupOf(m)
			s.remove(id)
			removed++
		case !m.CreatedAt.After(bodiesFrom) && (m.Request.Body != "" || m.Response.Body != ""):
			m.Request.Body, m.Response.Body = "", ""
			s.scopes[m.Scope()].all.ReplaceOrInsert(m)
		}
	}
	return removed
}

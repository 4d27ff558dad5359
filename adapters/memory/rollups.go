package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RollupKeeper = (*Store)(nil)

// The store keeps the statistics of the messages it purges as the SQLite
// store keeps its dropped day files' rollups: one stats.Rollup per scope,
// application and minute of CreatedAt, which each purge adds the messages
// it deletes to, until PurgeRollups deletes it. The statistics of a query
// with a part before its RollupsOnlyBefore count that part from them and
// from the messages still stored, expired or not.

// keptMinute names one kept rollup.
type keptMinute struct {
	scope  domain.Scope
	name   string
	minute int64 // Unix seconds
}

// keepRollupOf adds m, a message about to be purged, to its minute's kept
// rollup. The caller holds the write lock.
func (s *Store) keepRollupOf(m domain.Message) {
	unix := m.CreatedAt.Unix()
	k := keptMinute{m.Scope(), m.Name, unix - mod(unix, 60)}
	r := s.kept[k]
	if r == nil {
		r = &stats.Rollup{}
		s.kept[k] = r
	}
	r.AddMessage(m)
}

// PurgeRollups deletes the kept rollups of the minutes that end by before
// (ports.RollupKeeper).
func (s *Store) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: purge rollups: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k := range s.kept {
		if k.minute+60 <= before.Unix() {
			delete(s.kept, k)
			n++
		}
	}
	return n, nil
}

// addKeptRollups adds to b the kept rollups of scope's minutes that begin
// before edge (b refuses a minute partly outside its counted range).
func (s *Store) addKeptRollups(b *stats.RollupBuilder, scope domain.Scope, edge time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k, r := range s.kept {
		start := time.Unix(k.minute, 0).UTC()
		if k.scope == scope && start.Before(edge) {
			b.AddRollup(start, start.Add(time.Minute), k.name, r)
		}
	}
}

// mod is a modulo that is never negative (times before 1970).
func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

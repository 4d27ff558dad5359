package statsengine_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// markedStore is a statsengine.MarkStore on the memory store, as the
// Elasticsearch and MongoDB stores keep theirs: an Append stores its
// messages, then marks their minutes; Stats goes through the engine.
type markedStore struct {
	*memory.Store
	engine *statsengine.Engine
	// PurgeRollups hides the memory store's: the statistics go through
	// Marked, whose rollups go with their messages, so the store is no
	// ports.RollupKeeper.
	PurgeRollups struct{}

	mu        sync.Mutex
	ids       map[domain.Scope]map[string]bool           // every id appended, for Recount
	tallies   map[domain.Scope]map[string]domain.Message // which Lookup does not return
	marks     map[markKey]statsengine.Mark
	kept      map[markKey]statsengine.Kept
	failMarks bool // Appends fail after their messages, before their marks
	traces    []statsengine.Trace
	keptAsked int // the marks Kept was asked for
}

type markKey struct {
	scope  domain.Scope
	name   string
	minute int64
}

var (
	_ ports.MessageStore    = (*markedStore)(nil)
	_ statsengine.MarkStore = (*markedStore)(nil)

	errCrashedBeforeTheMarks = errors.New("the process stopped between the messages and their marks")
)

func newMarkedStore(cfg statsengine.Config) *markedStore {
	s := &markedStore{Store: memory.New(), ids: map[domain.Scope]map[string]bool{}, tallies: map[domain.Scope]map[string]domain.Message{},
		marks: map[markKey]statsengine.Mark{}, kept: map[markKey]statsengine.Kept{}}
	engine, err := statsengine.New(statsengine.Sources{Samples: s.Store, Rollups: statsengine.NewMarked(s)}, cfg)
	if err != nil {
		panic(err)
	}
	s.engine = engine
	return s
}

func (s *markedStore) Append(ctx context.Context, msgs []domain.Message) error {
	if err := s.Store.Append(ctx, msgs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if s.ids[m.Scope()] == nil {
			s.ids[m.Scope()] = map[string]bool{}
		}
		s.ids[m.Scope()][m.ID] = true
		if m.Tally {
			if s.tallies[m.Scope()] == nil {
				s.tallies[m.Scope()] = map[string]domain.Message{}
			}
			s.tallies[m.Scope()][m.ID] = m
		}
	}
	if s.failMarks {
		return errCrashedBeforeTheMarks
	}
	version := randomVersion()
	for _, m := range msgs {
		minute := m.CreatedAt.Truncate(time.Minute)
		key := markKey{m.Scope(), m.Name, minute.Unix()}
		mk := s.marks[key]
		mk.Minute, mk.Name, mk.Version = minute, m.Name, version
		mk.Messages++
		if expires := statsengine.MarkExpires(m); expires.After(mk.Expires) {
			mk.Expires = expires
		}
		if m.VisibleAt.After(mk.Settled) {
			mk.Settled = m.VisibleAt
		}
		s.marks[key] = mk
	}
	return nil
}

func randomVersion() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func (s *markedStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, tr, err := s.engine.Stats(ctx, q, now)
	s.mu.Lock()
	s.traces = append(s.traces, tr)
	s.mu.Unlock()
	return st, err
}

func (s *markedStore) MarksFrom(context.Context) (time.Time, error) { return time.Time{}, nil }

func (s *markedStore) Sync(context.Context, time.Time, time.Time) error { return nil }

func (s *markedStore) Marks(_ context.Context, scope domain.Scope, name string, from, to time.Time, yield func(statsengine.Mark) error) error {
	s.mu.Lock()
	var marks []statsengine.Mark
	for k, mk := range s.marks {
		if k.scope == scope && (name == "" || k.name == name) && mk.Minute.Before(to) && mk.Minute.Add(time.Minute).After(from) {
			marks = append(marks, mk)
		}
	}
	s.mu.Unlock()
	for _, mk := range marks {
		if err := yield(mk); err != nil {
			return err
		}
	}
	return nil
}

func (s *markedStore) MarkHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, sum uint64, marks, messages int64) error) error {
	hours := map[int64][]statsengine.Mark{}
	err := s.Marks(ctx, scope, name, from, to, func(mk statsengine.Mark) error {
		hour := mk.Minute.Truncate(time.Hour).Unix()
		hours[hour] = append(hours[hour], mk)
		return nil
	})
	if err != nil {
		return err
	}
	for _, hour := range slices.Sorted(maps.Keys(hours)) {
		var messages int64
		for _, mk := range hours[hour] {
			messages += mk.Messages
		}
		if err := yield(time.Unix(hour, 0).UTC(), statsengine.HashMarks(hours[hour]), int64(len(hours[hour])), messages); err != nil {
			return err
		}
	}
	return nil
}

func (s *markedStore) Kept(_ context.Context, scope domain.Scope, marks []statsengine.Mark, yield func(statsengine.Kept) error) error {
	s.mu.Lock()
	s.keptAsked += len(marks)
	s.mu.Unlock()
	for _, mk := range marks {
		s.mu.Lock()
		k, ok := s.kept[markKey{scope, mk.Name, mk.Minute.Unix()}]
		s.mu.Unlock()
		if ok {
			if err := yield(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *markedStore) Recount(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(*domain.Message) error) error {
	s.mu.Lock()
	ids := slices.Collect(maps.Keys(s.ids[scope]))
	tallies := slices.Collect(maps.Values(s.tallies[scope]))
	s.mu.Unlock()
	msgs, err := s.Lookup(ctx, scope, ids)
	if err != nil {
		return err
	}
	msgs = append(msgs, tallies...)
	for i := range msgs {
		m := &msgs[i]
		if (name == "" || m.Name == name) && !m.CreatedAt.Before(from) && m.CreatedAt.Before(to) {
			if err := yield(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *markedStore) Keep(_ context.Context, scope domain.Scope, kept []statsengine.Kept) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range kept {
		s.kept[markKey{scope, k.Name, k.Minute.Unix()}] = k
	}
	return nil
}

// Package memory is the reference message store: messages held in the
// process's memory as plain domain.Message values, for development, tests, and
// as the store the conformance suite's rules are first checked on. Messages
// last as long as the process.
//
// The domain decides every rule (domain.Precedes, domain.Filter.Matches,
// domain.Message.Readable, domain.FillPage, stats.Builder); the store
// keeps messages in order and hands copies over:
//
//   - each scope's messages in a B-tree in List order (domain.Precedes), and
//     the positions of each application's in one of their own (what a portal
//     bound to one application lists); maps from id and from reference to where
//     a message is; a B-tree by expiry for the purge;
//   - one sync.RWMutex over all of them. Messages are copied in, and never
//     changed while stored: copies taken under the lock share their strings and
//     header maps with the stored message, read-only, and stay valid after the
//     lock is let go;
//   - no call holds the lock for long: a walk (List, Stats, and so exports)
//     copies at most walkStep messages out of the tree under the read lock,
//     lets it go, filters and counts them, and goes on after the last one it
//     copied. Keyset order makes that safe: a step boundary is a cursor.
//     Writers and other readers get in between steps, and the walk checks its
//     context and yields its processor every step, and every walkStepBytes of
//     text it searched, so a client that leaves stops it within a step. A purge
//     deletes purgeStep messages per hold of the lock.
//
// What a step boundary means for statistics: Stats counts the messages
// readable at now. A message appended during the walk is readable at now only
// if it was stored (updated_at) at least the visibility delay before now; with
// the default delay of 5 s, appends that land during a walk are not, so the
// count is exactly that of the messages readable at now. With a delay of 0
// (development), a message appended during the walk may or may not be counted,
// as if the call had come a moment earlier or later. A purge that runs during
// a walk removes only messages expired at its own time, which a walk at an
// earlier now may then miss: they were about to leave anyway.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore   = (*Store)(nil)
	_ ports.TallyLookup    = (*Store)(nil)
	_ ports.HealthChecker  = (*Store)(nil)
	_ ports.SampleStreamer = (*Store)(nil)
)

// btreeDegree keeps a node of messages at a few kilobytes, so that an insert
// moves little of it.
const btreeDegree = 8

// messages is a B-tree of messages in List order.
type messages = btree.BTreeG[domain.Message]

func newMessages() *messages { return btree.NewG(btreeDegree, domain.Precedes) }

// at is the stand-in of the message at position c in List order, for finding
// it or seeking to it: domain.Precedes reads only CreatedAt and ID.
func at(c domain.Cursor) domain.Message { return domain.Message{CreatedAt: c.CreatedAt, ID: c.ID} }

// positionOf is m's position in List order.
func positionOf(m domain.Message) domain.Cursor {
	return domain.Cursor{CreatedAt: m.CreatedAt, ID: m.ID}
}

// positions is a B-tree of positions in List order.
type positions = btree.BTreeG[domain.Cursor]

func newPositions() *positions {
	return btree.NewG(btreeDegree, func(a, b domain.Cursor) bool { return domain.Precedes(at(a), at(b)) })
}

// scopeIndex holds one scope's messages, and each application's positions.
type scopeIndex struct {
	all    *messages
	byName map[string]*application
}

// application is the positions of one application's messages, and its name,
// which every stored message of it shares: statistics hash one string, not
// one per message.
type application struct {
	name      string
	positions *positions
}

// location is where a stored message is: its scope and its place in List order.
type location struct {
	scope domain.Scope
	at    domain.Cursor
}

// expiry is a message's place in the purge's order: soonest expiry first.
type expiry struct {
	expires time.Time
	id      string
}

func expiresFirst(a, b expiry) bool {
	if c := a.expires.Compare(b.expires); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

// Store is the in-memory ports.MessageStore. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	byID    map[string]location
	byRef   map[string]string // reference -> id
	scopes  map[domain.Scope]*scopeIndex
	expires *btree.BTreeG[expiry]
	// subjects is the subject index (erase.go).
	subjects subjectIndex
	// kept are the rollups of the purged messages (rollups.go).
	kept map[keptMinute]*stats.Rollup
	// classes holds the ids of each retention class's messages (retention.go).
	classes map[domain.RetentionClass]map[string]struct{}
}

// New returns an empty store.
func New() *Store {
	return &Store{
		byID:     map[string]location{},
		byRef:    map[string]string{},
		scopes:   map[domain.Scope]*scopeIndex{},
		expires:  btree.NewG(btreeDegree, expiresFirst),
		subjects: subjectIndex{},
		kept:     map[keptMinute]*stats.Rollup{},
		classes:  map[domain.RetentionClass]map[string]struct{}{},
	}
}

// Append stores copies of msgs. An id already stored keeps its message; a
// reference already taken stays with the message that took it. The batch is
// checked first, so a refused batch stores nothing. A tally is kept beside
// the messages, for Stats alone: List, Get and Lookup pass it by.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: append: %w", err)
	}
	copies := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			return fmt.Errorf("memory: append: message %d has no id", i)
		}
		copies[i] = m.Clone()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range copies {
		if _, stored := s.byID[m.ID]; !stored {
			s.insert(m)
		}
	}
	return nil
}

// insert stores m, which from now on nobody changes, and indexes its
// subjects.
func (s *Store) insert(m domain.Message) {
	s.subjects.add(m.Account, m.ID, m.Subjects)
	m.Subjects = nil // held by the index alone
	// Validation's verdict for the rules: kept, it would hold a body since
	// rewritten.
	m.Request.JSONBody, m.Response.JSONBody = "", ""
	idx := s.scopes[m.Scope()]
	if idx == nil {
		idx = &scopeIndex{all: newMessages(), byName: map[string]*application{}}
		s.scopes[m.Scope()] = idx
	}
	app := idx.byName[m.Name]
	if app == nil {
		app = &application{name: m.Name, positions: newPositions()}
		idx.byName[m.Name] = app
	}
	m.Name = app.name
	idx.all.ReplaceOrInsert(m)
	app.positions.ReplaceOrInsert(positionOf(m))
	s.byID[m.ID] = location{scope: m.Scope(), at: positionOf(m)}
	if _, taken := s.byRef[m.Reference]; !taken && m.Reference != "" && !m.Tally {
		s.byRef[m.Reference] = m.ID
	}
	s.expires.ReplaceOrInsert(expiry{expires: m.ExpiresAt, id: m.ID})
	s.classify(m)
}

// find is the stored message with id, under the lock; the copy shares its
// strings and headers with the stored one.
func (s *Store) find(id string) (domain.Message, bool) {
	loc, ok := s.byID[id]
	if !ok {
		return domain.Message{}, false
	}
	return s.scopes[loc.scope].all.Get(at(loc.at))
}

// Get finds a message by id, then by reference, in scope and readable at now.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, fmt.Errorf("memory: get: %w", err)
	}
	s.mu.RLock()
	m, ok := s.find(idOrReference)
	if !ok {
		m, ok = s.find(s.byRef[idOrReference])
	}
	s.mu.RUnlock()
	if !ok || m.Tally || m.Scope() != scope || !m.Readable(now) {
		return domain.Message{}, fmt.Errorf("memory: message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return m.WithoutExpiredBodies(now).Clone(), nil
}

// Lookup returns scope's stored messages with any of ids, readable or not.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: lookup: %w", err)
	}
	var found []domain.Message
	s.mu.RLock()
	for _, id := range ids {
		if m, ok := s.find(id); ok && !m.Tally && m.Scope() == scope {
			found = append(found, m)
		}
	}
	s.mu.RUnlock()
	for i := range found {
		found[i] = found[i].Clone()
	}
	return found, nil
}

// LookupTallies returns those of ids stored in scope as tallies.
func (s *Store) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: lookup tallies: %w", err)
	}
	var found []ports.StoredTally
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range ids {
		if m, ok := s.find(id); ok && m.Tally && m.Scope() == scope {
			found = append(found, ports.StoredTally{ID: id, Submitted: m.Rules.Submitted})
		}
	}
	return found, nil
}

// purgeStep is how many messages a purge deletes per hold of the lock.
const purgeStep = 1000

// PurgeExpired deletes every message whose ExpiresAt is at or before now,
// soonest expiry first, purgeStep at a time, adding each to the rollups kept
// of its minute (rollups.go). Hidden messages (erasure.HiddenExpiry) are the
// erasure job's to delete, and counted by it: left alone.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	var purged int64
	for {
		if err := ctx.Err(); err != nil {
			return purged, fmt.Errorf("memory: purge: %w", err)
		}
		n := s.purgeStep(now)
		purged += int64(n)
		if n < purgeStep {
			return purged, nil
		}
	}
}

// purgeStep deletes up to purgeStep expired messages and returns how many.
func (s *Store) purgeStep(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var expired []string
	s.expires.AscendGreaterOrEqual(expiry{expires: erasure.HiddenExpiry.Add(time.Nanosecond)}, func(e expiry) bool {
		if e.expires.After(now) || len(expired) == purgeStep {
			return false
		}
		expired = append(expired, e.id)
		return true
	})
	for _, id := range expired {
		if m, ok := s.find(id); ok {
			s.keepRollupOf(m)
		}
		s.remove(id)
	}
	return len(expired)
}

// remove forgets the stored message id, and the indexes it leaves empty.
func (s *Store) remove(id string) {
	loc := s.byID[id]
	idx := s.scopes[loc.scope]
	m, _ := idx.all.Delete(at(loc.at))
	app := idx.byName[m.Name]
	app.positions.Delete(loc.at)
	if app.positions.Len() == 0 {
		delete(idx.byName, m.Name)
	}
	if idx.all.Len() == 0 {
		delete(s.scopes, loc.scope)
	}
	delete(s.byID, id)
	if s.byRef[m.Reference] == id {
		delete(s.byRef, m.Reference)
	}
	s.expires.Delete(expiry{expires: m.ExpiresAt, id: id})
	s.subjects.remove(m.Account, id)
	s.declassify(m)
}

// ReadLag is zero: a message is readable as soon as Append returns.
func (s *Store) ReadLag() time.Duration { return 0 }

// Ping always succeeds: there is no backend to lose.
func (s *Store) Ping(context.Context) error { return nil }

package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// recordingStore records what the use cases ask of the store and answers from
// fields the test sets.
type recordingStore struct {
	mu        sync.Mutex
	appended  []domain.Message
	queries   []domain.Query
	stats     []stats.Query
	gets      []string
	purges    []time.Time
	err       error          // returned by every call when set
	message   domain.Message // returned by Get
	page      domain.Page    // returned by List
	readLag   time.Duration
	purgeHook func(ctx context.Context) (int64, error)
	block     chan struct{} // when set, Append waits for it to close
}

var _ ports.MessageStore = (*recordingStore)(nil)

func (s *recordingStore) Append(_ context.Context, msgs []domain.Message) error {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.appended = append(s.appended, msgs...)
	return nil
}

func (s *recordingStore) List(_ context.Context, q domain.Query, _ time.Time) (domain.Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, q)
	return s.page, s.err
}

func (s *recordingStore) Stats(_ context.Context, q stats.Query, _ time.Time) (stats.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = append(s.stats, q)
	return stats.New(q), s.err
}

func (s *recordingStore) Lookup(_ context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []domain.Message
	for _, m := range s.appended {
		if m.Scope() == scope && slices.Contains(ids, m.ID) {
			found = append(found, m.Clone())
		}
	}
	return found, s.err
}

func (s *recordingStore) Get(_ context.Context, _ domain.Scope, idOrReference string, _ time.Time) (domain.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets = append(s.gets, idOrReference)
	return s.message, s.err
}

func (s *recordingStore) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	s.purges = append(s.purges, now)
	hook := s.purgeHook
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx)
	}
	return 0, nil
}

func (s *recordingStore) ReadLag() time.Duration { return s.readLag }

func (s *recordingStore) purgeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.purges)
}

// draftsOf decodes a POST body as the HTTP API does: the tests are written in
// the contract's JSON.
func draftsOf(body string) domain.Drafts {
	drafts, err := httpapi.DecodeSubmissions([]byte(body), domain.DefaultMaxBatch)
	if err != nil {
		panic(fmt.Sprintf("a test body does not decode: %v", err))
	}
	return drafts
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var (
	testNow   = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	acmeLive  = domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}
	submitted = `{"name":"shop","created_at":1714564800,"method":"get","path":"/orders",
		"request":{"header":{"authorization":"Bearer secret"}},"response":{"status_code":200,"body":"{}"}}`
)

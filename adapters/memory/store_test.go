package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/memory/memoryfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func newStore(context.Context, *testing.T) (ports.MessageStore, error) { return memory.New(), nil }

func TestConformance(t *testing.T) {
	conformance.RunStoreTests(t, newStore)
}

func TestEraseConformance(t *testing.T) {
	conformance.RunEraseTests(t, newStore)
}

func TestAPIConformance(t *testing.T) {
	conformance.RunAPITests(t, newStore, httpapitest.Serve)
}

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

func message(t testing.TB, createdAt time.Time) domain.Message {
	return conformance.NewMessage(t, scope, createdAt)
}

func TestListRefusesLimitBelowOne(t *testing.T) {
	s := memory.New()
	for _, limit := range []int{0, -1} {
		if _, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: limit}, time.Now()); err == nil {
			t.Errorf("List with limit %d: no error, want one", limit)
		}
	}
}

func TestAppendWithoutIDStoresNothing(t *testing.T) {
	s := memory.New()
	now := time.Now()
	good, bad := message(t, now), message(t, now)
	bad.ID = ""
	if err := s.Append(t.Context(), []domain.Message{good, bad}); err == nil {
		t.Fatal("Append of a message without id: no error, want one")
	}
	if _, err := s.Get(t.Context(), scope, good.ID, now); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get of the valid message of a refused batch: %v, want ErrNotFound", err)
	}
}

// The store keeps no validation's verdict (domain.Content.JSONBody), which
// would keep the body it was given for alive beside the body stored.
func TestAppendKeepsNoJSONVerdict(t *testing.T) {
	s := memory.New()
	now := time.Now()
	m := message(t, now)
	m.Request.JSONBody, m.Request.Body = `{"a":1}`, `{"a":"[erased]"}`
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(t.Context(), scope, m.ID, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Request.JSONBody != "" || got.Request.Body != m.Request.Body {
		t.Errorf("stored JSONBody %q, body %q", got.Request.JSONBody, got.Request.Body)
	}
}

func TestCancelledContext(t *testing.T) {
	s := memory.New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	now := time.Now()
	if err := s.Append(ctx, []domain.Message{message(t, now)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Append: %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, domain.Query{Scope: scope, Limit: 1}, now); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, scope, "x", now); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v, want context.Canceled", err)
	}
	if _, err := s.PurgeExpired(ctx, now); !errors.Is(err, context.Canceled) {
		t.Errorf("PurgeExpired: %v, want context.Canceled", err)
	}
}

func TestDevelopmentStoreTraits(t *testing.T) {
	s := memory.New()
	if lag := s.ReadLag(); lag != 0 {
		t.Errorf("ReadLag() = %s, want 0", lag)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func TestModuleProvidesMessageStore(t *testing.T) {
	var store ports.MessageStore
	fxtest.New(t, memoryfx.Module, fx.Populate(&store)).RequireStart().RequireStop()
	if _, ok := store.(*memory.Store); !ok {
		t.Fatalf("the module provides %T, want *memory.Store", store)
	}
	if _, ok := store.(ports.HealthChecker); !ok {
		t.Error("the provided store is not a ports.HealthChecker")
	}
}

// BenchmarkList pages through 100,000 messages of ten applications.
func BenchmarkList(b *testing.B) {
	s := memory.New()
	now := time.Now()
	const total, apps = 100_000, 10
	batch := make([]domain.Message, 0, 1000)
	var deep *domain.Cursor
	for i := range total {
		m := message(b, now.Add(-time.Duration(i)*time.Millisecond))
		m.Name = fmt.Sprintf("app-%d", i%apps)
		batch = append(batch, m)
		if i == total/2 {
			deep = &domain.Cursor{CreatedAt: m.CreatedAt, ID: m.ID}
		}
		if len(batch) == cap(batch) {
			if err := s.Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, bc := range []struct {
		name string
		q    domain.Query
	}{
		{"first page", domain.Query{Scope: scope, Limit: domain.DefaultLimit}},
		{"page in the middle", domain.Query{Scope: scope, Limit: domain.DefaultLimit, After: deep}},
		{"one application", domain.Query{Scope: scope, Limit: domain.DefaultLimit, Filter: domain.Filter{Name: "app-3"}}},
		{"time range", domain.Query{Scope: scope, Limit: domain.MaxLimit, Filter: domain.Filter{
			From: now.Add(-80 * time.Second), To: now.Add(-60 * time.Second)}}},
		{"rare status", domain.Query{Scope: scope, Limit: domain.DefaultLimit, Filter: domain.Filter{StatusMin: 500, StatusMax: 599}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.List(b.Context(), bc.q, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestRewriteConformance(t *testing.T) {
	conformance.RunRewriteTests(t, newStore)
}

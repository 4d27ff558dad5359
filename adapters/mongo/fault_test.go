package mongo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A stopped server gives ErrUnavailable from every operation, not a hang, and
// the same Store works again once the server is back.
func TestServerOutageAndRecovery(t *testing.T) {
	t.Parallel()
	srv := mongotest.NewServer(t)
	s := mustOpen(t, mongo.Config{URI: srv.URI(), Database: "outage", ServerSelectionTimeout: time.Second})
	before := newMessage(t, time.Now())
	if err := s.Append(opCtx(t), []domain.Message{before}); err != nil {
		t.Fatal(err)
	}

	if err := srv.Stop(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	during := newMessage(t, time.Now())
	readAt := during.VisibleAt
	for name, op := range map[string]func(ctx context.Context) error{
		"Append": func(ctx context.Context) error { return s.Append(ctx, []domain.Message{during}) },
		"List": func(ctx context.Context) error {
			_, err := s.List(ctx, domain.Query{Scope: scope, Limit: 10}, readAt)
			return err
		},
		"Get": func(ctx context.Context) error {
			_, err := s.Get(ctx, scope, before.ID, readAt)
			return err
		},
		"PurgeExpired": func(ctx context.Context) error {
			_, err := s.PurgeExpired(ctx, readAt)
			return err
		},
		"Ping": s.Ping,
	} {
		// The test's deadline only stops a hang: the store's own server
		// selection timeout must end the call long before.
		ctx := opCtx(t)
		if err := op(ctx); !errors.Is(err, ports.ErrUnavailable) {
			t.Errorf("%s while the server is stopped = %v, want an error wrapping ports.ErrUnavailable", name, err)
		}
		if ctx.Err() != nil {
			t.Errorf("%s while the server is stopped ran into the test's deadline: the store does not bound it", name)
		}
	}

	if err := srv.Start(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	after := newMessage(t, time.Now())
	eventually(t, recoverTimeout, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		return s.Append(ctx, []domain.Message{after})
	})
	page, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, after.VisibleAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range page.Messages {
		ids[m.ID] = true
	}
	if !ids[before.ID] || !ids[after.ID] {
		t.Errorf("after recovery List has %v, want %s (written before the outage) and %s", ids, before.ID, after.ID)
	}
	if err := s.Ping(opCtx(t)); err != nil {
		t.Errorf("Ping after recovery: %v", err)
	}

	// A network blip: the first call on a cut connection may fail, but only
	// as an outage, and the store carries on.
	srv.DropConnections()
	blip := newMessage(t, time.Now())
	err = s.Append(opCtx(t), []domain.Message{blip})
	t.Logf("first Append after dropped connections: %v", err)
	if err != nil && !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append after dropped connections = %v, want nil or ErrUnavailable", err)
	}
	eventually(t, recoverTimeout, func() error {
		_, err := s.Get(opCtx(t), scope, blip.ID, blip.VisibleAt)
		if errors.Is(err, ports.ErrNotFound) { // the failed first try stored nothing
			err = s.Append(opCtx(t), []domain.Message{blip})
		}
		return err
	})
}

func TestNewFailsUnavailableWithoutServer(t *testing.T) {
	t.Parallel()
	_, err := mongo.New(opCtx(t), mongo.Config{URI: closedPort(t), ServerSelectionTimeout: 500 * time.Millisecond})
	if !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("New against a closed port = %v, want an error wrapping ports.ErrUnavailable", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]mongo.Config{
		"no URI":               {},
		"blank URI":            {URI: "  "},
		"not a URI":            {URI: "http://example.invalid/"},
		"database with a dot":  {URI: "mongodb://127.0.0.1:1/", Database: "a.b"},
		"system collection":    {URI: "mongodb://127.0.0.1:1/", Collection: "system.users"},
		"negative timeout":     {URI: "mongodb://127.0.0.1:1/", ServerSelectionTimeout: -time.Second},
		"unacknowledged write": {URI: "mongodb://127.0.0.1:1/", WriteConcern: writeconcern.Unacknowledged()},
	} {
		// Refused before any connection: port 1 would otherwise be tried.
		if s, err := mongo.New(opCtx(t), cfg); err == nil || errors.Is(err, ports.ErrUnavailable) {
			if s != nil {
				closeStore(t, s)
			}
			t.Errorf("%s: New = %v, want a configuration error", name, err)
		}
	}
}

package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// QueryWatch is what a test sees of a store's queries from between the store
// and its backend (a proxy): Held receives once a query has reached the
// backend and gets no reply, Left once the client of a held query closed its
// connection. Hold starts or stops holding queries.
type QueryWatch struct {
	Hold       func(on bool)
	Held, Left <-chan struct{}
}

// cancelWithin bounds each wait of RunCancelledReads.
const cancelWithin = 30 * time.Second

// RunCancelledReads checks that cancellation reaches a store's queries: a list
// with q and a statistics call of scope, each cancelled while its query is
// held, return an error wrapping context.Canceled at once, and close the
// query's connection, which is how a database learns to stop the query
// (MongoDB kills the operation, Elasticsearch cancels the search task).
func RunCancelledReads(t *testing.T, s ports.MessageReader, scope domain.Scope, watch QueryWatch) {
	t.Helper()
	now := time.Now()
	st, err := stats.ParseQuery(map[string][]string{}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Scope = scope
	for _, read := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"list with q", func(ctx context.Context) error {
			_, err := s.List(ctx, domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: "absent"}}, now)
			return err
		}},
		{"statistics", func(ctx context.Context) error {
			_, err := s.Stats(ctx, st, now)
			return err
		}},
	} {
		watch.Hold(true)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- read.run(ctx) }()
		select {
		case <-watch.Held:
		case err := <-done:
			cancel()
			t.Fatalf("%s: finished before its query was held: %v", read.name, err)
		case <-time.After(cancelWithin):
			cancel()
			t.Fatalf("%s: no query reached the backend", read.name)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s after its caller left: %v, want context.Canceled", read.name, err)
			}
		case <-time.After(cancelWithin):
			t.Fatalf("%s: still waiting for its query after its caller left", read.name)
		}
		select {
		case <-watch.Left:
		case <-time.After(cancelWithin):
			t.Errorf("%s: the connection of the cancelled query stayed open", read.name)
		}
		watch.Hold(false)
	}
}

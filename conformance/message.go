package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// NewMessage builds a valid message of scope created at createdAt, readable from
// then until the default retention later, with a fresh identity; edits then change
// any field. It is for adapters' own tests, beside the suites.
func NewMessage(tb testing.TB, scope domain.Scope, createdAt time.Time, edits ...func(*domain.Message)) domain.Message {
	tb.Helper()
	id, err := domain.NewIdentity()
	if err != nil {
		tb.Fatalf("new message identity: %v", err)
	}
	created := domain.Micro(createdAt)
	m := domain.Message{
		ID: id.ID, Reference: id.Reference, Account: scope.Account, Domain: scope.Domain,
		Name: "shop", Method: "GET", Path: "/v1/orders", StatusCode: 200,
		Request:   domain.Content{Header: domain.Header{}},
		Response:  domain.Content{Header: domain.Header{}},
		CreatedAt: created, UpdatedAt: created, VisibleAt: created, ExpiresAt: created.Add(domain.DefaultRetention),
	}
	for _, edit := range edits {
		edit(&m)
	}
	return m
}

// SampleOneIn compiles a rule set of one ingest rule keeping 1 in rate of
// every exchange (rules.Compiled.Apply turns the others into tallies), for
// tests that hold sampled traffic against the same traffic kept whole.
func SampleOneIn(tb testing.TB, rate int) *rules.Compiled {
	tb.Helper()
	rs, err := rules.Parse(fmt.Appendf(nil, `{"ingest": [{"id": "sample", "status": ["100-599"], "action": "sample", "sample_rate": %d}]}`, rate))
	if err != nil {
		tb.Fatal(err)
	}
	sample, err := rules.Compile(rs, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		tb.Fatal(err)
	}
	return sample
}

package conformance

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
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

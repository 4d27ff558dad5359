package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// The times a default policy would give a message; purge fixtures rely on
// ExpiresAt = CreatedAt + fixtureRetention, as a store that deletes whole days may.
const (
	fixtureRetention  = domain.DefaultRetention
	fixtureVisibility = domain.DefaultVisibilityDelay
)

// Scopes of the fixtures. "acme" is a prefix of "acme2" so that a store matching
// accounts by prefix is caught.
var (
	scopeLive      = domain.Scope{Account: "acme", Domain: domain.DomainLive}
	scopeTest      = domain.Scope{Account: "acme", Domain: domain.DomainTest}
	scopeOtherLive = domain.Scope{Account: "acme2", Domain: domain.DomainLive}
)

// fixtures builds the messages of one subtest around the real time at its start.
// Real time matters: MongoDB's TTL monitor deletes documents whose ExpiresAt is in
// the real past, so every fixture expires in the real future and reads pass an
// explicit now instead.
type fixtures struct {
	tb     testing.TB
	anchor time.Time
}

func newFixtures(tb testing.TB) fixtures {
	return fixtures{tb: tb, anchor: domain.Micro(time.Now())}
}

// now is the read time of a subtest: every message built with default times and
// created up to an hour before the anchor is readable then.
func (f fixtures) now() time.Time { return f.anchor.Add(time.Hour) }

// ago is the anchor moved back by d.
func (f fixtures) ago(d time.Duration) time.Time { return f.anchor.Add(-d) }

func (f fixtures) identity() domain.Identity {
	f.tb.Helper()
	id, err := domain.NewIdentity()
	if err != nil {
		f.tb.Fatalf("fixture identity: %v", err)
	}
	return id
}

// message builds a message of scope created at createdAt with the times of the
// default policy, stored at createdAt; edits then change any field.
func (f fixtures) message(scope domain.Scope, createdAt time.Time, edits ...func(*domain.Message)) domain.Message {
	f.tb.Helper()
	id := f.identity()
	created := domain.Micro(createdAt)
	m := domain.Message{
		ID:         id.ID,
		Reference:  id.Reference,
		Account:    scope.Account,
		Domain:     scope.Domain,
		Name:       "shop",
		IPAddress:  "203.0.113.7",
		Method:     "GET",
		Path:       "/v1/orders",
		StatusCode: 200,
		Request: domain.Content{
			Header: domain.Header{"Accept": {"application/json"}},
			Body:   "",
		},
		Response: domain.Content{
			Header:      domain.Header{"Content-Type": {"application/json"}},
			Body:        `{"ok":true}`,
			ContentType: "application/json",
		},
		CreatedAt: created,
		UpdatedAt: created,
		VisibleAt: created.Add(fixtureVisibility),
		ExpiresAt: created.Add(fixtureRetention),
	}
	for _, edit := range edits {
		edit(&m)
	}
	return m
}

// series builds n messages of scope, the first created at newest and each next
// one step earlier.
func (f fixtures) series(scope domain.Scope, n int, newest time.Time, step time.Duration, edits ...func(*domain.Message)) []domain.Message {
	f.tb.Helper()
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = f.message(scope, newest.Add(-time.Duration(i)*step), edits...)
	}
	return msgs
}

// richMessages exercise every field: unicode, multi-valued headers in submission
// order, a header without values, empty header maps and bodies, every kind of
// content type, IPv6, and times with odd microseconds.
func (f fixtures) richMessages(scope domain.Scope) []domain.Message {
	f.tb.Helper()
	created := f.ago(2 * time.Hour).Add(123457 * time.Microsecond)
	return []domain.Message{
		f.message(scope, created, func(m *domain.Message) {
			m.Name = "Ünïcødé shop ☕"
			m.IPAddress = "2001:db8::1"
			m.Method = "PATCH"
			m.Path = "/v1/orders/42?expand=items&q=%20x"
			m.Route = "/v1/orders/{id}"
			m.StatusCode = 201
			m.Request = domain.Content{
				Header: domain.Header{
					"Accept":        {"application/json", "text/plain;q=0.5"},
					"X-Order":       {"zeta", "alpha", "mu"},
					"Authorization": {domain.Mask},
					"X-Empty-Value": {""},
					"X-No-Values":   {},
				},
				Body:        "{\"greeting\":\"こんにちは 👋\",\"nul\":\"\x00\",\"quote\":\"\\\"\"}",
				ContentType: "application/json",
			}
			m.Response = domain.Content{Header: domain.Header{}, Body: "", ContentType: ""}
			m.Rules = domain.RulesRecord{Version: 7, Source: "proxy", Rescrubbed: 9, Changes: []domain.RuleChange{
				{Rule: "mask-emails", Field: "request.body.user.email"}, {Rule: "drop-token", Field: `query.token`}}}
			m.UpdatedAt = m.CreatedAt.Add(1500*time.Millisecond + 3*time.Microsecond)
			m.VisibleAt = m.UpdatedAt.Add(fixtureVisibility + 11*time.Microsecond)
		}),
		f.message(scope, created.Add(-time.Microsecond), func(m *domain.Message) {
			m.IPAddress = ""
			m.Method = "OPTIONS"
			m.Path = "/"
			m.StatusCode = 100
			m.Request = domain.Content{Header: domain.Header{}, Body: ""}
			m.Response = domain.Content{
				Header:      domain.Header{"Set-Cookie": {domain.Mask, domain.Mask}, "Content-Type": {"text/plain; charset=utf-8"}},
				Body:        "plain text ✓ — ends with a newline\n",
				ContentType: "text/plain",
			}
		}),
		f.message(scope, created.Add(-2*time.Second), func(m *domain.Message) {
			m.Name = strings.Repeat("n", 200)
			m.Route = "/" + strings.Repeat("ř", domain.MaxRouteLength-1)
			m.IPAddress = "192.0.2.255"
			m.StatusCode = 599
			m.Rules = domain.RulesRecord{Source: "api"}
			m.Response = domain.Content{
				Header:      domain.Header{},
				Body:        "\u0001\u0002\u007f\u00ff\ufffd",
				ContentType: "application/octet-stream",
			}
		}),
	}
}

// largeBody is a little over 1 MiB of varied, multi-byte text.
func largeBody() string {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "%07d héllo wörld ✓ ", i)
	}
	return b.String()
}

// expectedPage is what the contract says List must return for q at now over
// msgs, computed with the domain's own rules (one definition of each).
func expectedPage(msgs []domain.Message, q domain.Query, now time.Time) []domain.Message {
	var want []domain.Message
	for _, m := range msgs {
		if m.Scope() == q.Scope && m.Readable(now) && q.Filter.Matches(m) && (q.After == nil || q.After.Admits(m)) {
			want = append(want, m)
		}
	}
	sortNewestFirst(want)
	return want
}

func sortNewestFirst(msgs []domain.Message) {
	slices.SortFunc(msgs, func(a, b domain.Message) int {
		switch {
		case domain.Precedes(a, b):
			return -1
		case domain.Precedes(b, a):
			return 1
		}
		return 0
	})
}

func idsOf(msgs []domain.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func cloneAll(msgs []domain.Message) []domain.Message {
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

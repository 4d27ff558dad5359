package mongo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// The server's q and duration filters select exactly what domain.Filter.Matches
// selects (the memory store's substring search), on texts chosen for what a
// regex could get wrong: metacharacters, case, non-ASCII, repeated header values,
// header names, the last of several values, and paging through matches.
func TestSearchAndDurationMatchTheDomain(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, freshConfig(t))
	start := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	ms := func(n float64) *time.Duration { d := time.Duration(n * float64(time.Millisecond)); return &d }
	edits := []func(*domain.Message){
		func(m *domain.Message) { m.Path = "/v1/orders/ord_8f7d?expand=items" },
		func(m *domain.Message) { m.Request.Body = `{"order":"ORD_8F7D","total":1.5}` },
		func(m *domain.Message) { m.Response.Body = "price (a+b)*[c] $x ^y | z. \\d" },
		func(m *domain.Message) {
			m.Request.Header = domain.Header{"X-Trace": {"first", "Ünïcode Straße"}, "X-Empty": {}}
		},
		func(m *domain.Message) {
			m.Response.Header = domain.Header{"Set-Cookie": {"a=1", "session=ada@example.com"}}
		},
		func(m *domain.Message) { m.Request.Header = domain.Header{"Ord_8f7d-Name": {"value"}} }, // a name only
		func(m *domain.Message) { m.Request.Body = "nul\x00byte and tab\there" },
		func(m *domain.Message) { m.Duration, m.HasDuration = 1500*time.Microsecond, true },
		func(m *domain.Message) { m.Duration, m.HasDuration = 0, true },
		func(m *domain.Message) {
			m.Duration, m.HasDuration = 250*time.Millisecond, true
			m.Request.Body = "ord_8f7d slow"
		},
	}
	var msgs []domain.Message
	for i, edit := range edits {
		msgs = append(msgs, newMessage(t, start.Add(time.Duration(i)*time.Second), func(m *domain.Message) {
			m.Path, m.Request.Body, m.Response.Body = "/plain", "", ""
			m.Request.Header, m.Response.Header = domain.Header{}, domain.Header{}
			m.HasDuration, m.Duration = false, 0
			edit(m)
		}))
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, f := range []domain.Filter{
		{Text: "ord_8f7d"}, {Text: "8F7D"}, {Text: "orders/ORD"}, {Text: "(a+b)*[c] $x ^y | z. \\d"}, {Text: "a+b"},
		{Text: "ünïcode straße"}, {Text: "ada@example.com"}, {Text: "session"}, {Text: "x-trace"}, {Text: "Name"},
		{Text: "nul\x00byte"}, {Text: "tab\there"}, {Text: ".*"}, {Text: "absent"},
		{MinDuration: ms(1.5)}, {MaxDuration: ms(1.5)}, {MinDuration: ms(1.501)}, {MaxDuration: ms(0)},
		{MinDuration: ms(0), MaxDuration: ms(1000)}, {Text: "ord_8f7d", MinDuration: ms(100)},
		{Text: "8f7d", Path: "/v1/orders/ord_8f7d?expand=items"}, {Text: "ord", PathPrefix: "/v1"},
	} {
		var want []string
		for _, m := range slices.Backward(msgs) {
			if f.Matches(m) && m.Readable(now) {
				want = append(want, m.ID)
			}
		}
		// Pages of one, so the keyset condition meets the search.
		var got []string
		q := domain.Query{Scope: scope, Filter: f, Limit: 1}
		for range len(msgs) + 1 {
			page, err := s.List(opCtx(t), q, now)
			if err != nil {
				t.Fatalf("filter %+v: %v", f, err)
			}
			for _, m := range page.Messages {
				got = append(got, m.ID)
			}
			if !page.HasMore {
				break
			}
			last := page.Messages[len(page.Messages)-1]
			q.After = &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %+v: listed %q, want %q", f, got, want)
		}
	}
}

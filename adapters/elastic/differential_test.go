package elastic_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
)

// Queries at the edges of what Elasticsearch can represent (date_nanos spans
// 1970 to 2262; the ip type equates IPv4 with IPv4-mapped IPv6) return what the
// memory store, the reference, returns.
func TestEdgeQueriesMatchMemoryStore(t *testing.T) {
	s, _ := newStore(t)
	ref := memory.New()
	now := time.Now()
	msgs := []domain.Message{message(t, now), message(t, now.Add(-time.Hour)), message(t, now.Add(-2*time.Hour))}
	msgs[0].IPAddress = "10.0.0.1"
	msgs[1].IPAddress = "::ffff:10.0.0.1"
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if err := ref.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, s, now, msgs...)

	early := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	late := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		q    domain.Query
		now  time.Time
	}{
		{"from before 1970", domain.Query{Filter: domain.Filter{From: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}}, now},
		{"from after 2262", domain.Query{Filter: domain.Filter{From: late}}, now},
		{"to before 1970", domain.Query{Filter: domain.Filter{To: early}}, now},
		{"to after 2262", domain.Query{Filter: domain.Filter{To: late}}, now},
		{"read before 1970", domain.Query{}, early},
		{"read after 2262", domain.Query{}, late},
		{"cursor after 2262", domain.Query{After: &domain.Cursor{CreatedAt: late, ID: msgs[0].ID}}, now},
		{"cursor before 1970", domain.Query{After: &domain.Cursor{CreatedAt: early, ID: msgs[0].ID}}, now},
		{"cursor at a nanosecond", domain.Query{After: &domain.Cursor{CreatedAt: msgs[1].CreatedAt.Add(time.Nanosecond), ID: ""}}, now},
		{"from at a nanosecond", domain.Query{Filter: domain.Filter{From: msgs[1].CreatedAt.Add(-time.Nanosecond)}}, now},
		{"to at a nanosecond", domain.Query{Filter: domain.Filter{To: msgs[1].CreatedAt.Add(time.Nanosecond)}}, now},
		{"IPv4", domain.Query{Filter: domain.Filter{IPAddress: "10.0.0.1"}}, now},
		{"IPv4-mapped IPv6", domain.Query{Filter: domain.Filter{IPAddress: "::ffff:10.0.0.1"}}, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Scope, tc.q.Limit = scope, 10
			want, err := ref.List(t.Context(), tc.q, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.List(t.Context(), tc.q, tc.now)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if !slices.Equal(ids(got.Messages), ids(want.Messages)) || got.HasMore != want.HasMore {
				t.Errorf("List = %v (more %v), the memory store gives %v (more %v)", ids(got.Messages), got.HasMore, ids(want.Messages), want.HasMore)
			}
		})
	}
	for _, at := range []time.Time{early, late} {
		if _, err := s.Get(t.Context(), scope, msgs[0].ID, at); err == nil {
			t.Errorf("Get at %s found a message", at)
		}
	}
}

func ids(msgs []domain.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

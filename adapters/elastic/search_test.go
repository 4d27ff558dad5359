package elastic_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Where the contract lets a store answer either way, this store answers as a
// word index: q's words must be whole words of a text, consecutive, in one
// text. Pinned so that a change of analyzer is a visible act.
func TestSearchIsAWordIndex(t *testing.T) {
	s, _ := newStore(t)
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	order := message(t, at)
	order.Response.Body = `{"order":"ord_8f7d","note":"Ada Lovelace"}`
	spaced := message(t, at.Add(time.Microsecond))
	spaced.Request.Body = `{"to":"ada example.com"}`
	spaced.Request.Header = domain.Header{"X-Trace": {"first half"}, "X-Trace-2": {"second half"}}
	msgs := []domain.Message{order, spaced}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	now := at.Add(time.Minute)
	waitReadable(t, s, now, msgs...)
	for _, tc := range []struct {
		q    string
		want []domain.Message
	}{
		{"ord_8f7d", []domain.Message{order}},
		{"8f7d", nil},                                 // inside a word: a substring store would find it
		{"ada@example.com", []domain.Message{spaced}}, // the same words, other separators
		{"ada", []domain.Message{spaced, order}},
		{"Lovelace ada", nil}, // not consecutive
		{"half second", nil},  // across two header values: each is a text of its own
		{"first half", []domain.Message{spaced}},
	} {
		page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: tc.q}}, now)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		var want []string
		for _, m := range tc.want {
			want = append(want, m.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("q=%q found %v, want %v", tc.q, got, want)
		}
	}
}

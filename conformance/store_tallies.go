package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Tallies are the exchanges ingest rules dropped (domain.Message.Tally):
// appended with the messages of their batch, counted by Stats as any message
// (and as Dropped), returned by no read.

// talliesFixtures are 60 messages over six hours, every third a tally, of
// two applications, statuses and durations that vary, and paths of which
// some hold the word "healthz".
func talliesFixtures(f fixtures) (msgs, tallies []domain.Message) {
	from, _ := statsRange(f)
	names := []string{"shop", "billing"}
	statuses := []int{200, 204, 404, 500, 503}
	for i := range 60 {
		m := f.message(scopeLive, from.Add(time.Duration(i)*347*time.Second), func(m *domain.Message) {
			m.Name = names[i%len(names)]
			m.StatusCode = statuses[i%len(statuses)]
			m.Path = fmt.Sprintf("/v1/items/%d", i%4)
			if i%6 == 0 {
				m.Path = "/healthz?probe=lb"
			}
			if i%5 != 4 {
				withDuration(float64(i%11)*12.5 + float64(i)*0.001)(m)
			}
			if i%7 == 0 {
				m.Route = "/v1/items/{id}"
			}
		})
		if i%3 == 0 {
			tallies = append(tallies, m.AsTally())
			continue
		}
		msgs = append(msgs, m)
	}
	return msgs, tallies
}

// A tally is counted by Stats, under every filter, as a message without
// headers and bodies would be, and as Dropped; List, Get and Lookup never
// return it, by id or by reference.
func testTalliesCountedNeverRead(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs, tallies := talliesFixtures(f)
	all := append(append([]domain.Message{}, msgs...), tallies...)
	mustAppend(t, s, all) // one write, as the ingester appends a submission
	waitForStored(t, s, f.now(), msgs)

	listed := listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now())
	assertIDs(t, "List of messages and tallies", expectedPage(msgs, domain.Query{Scope: scopeLive}, f.now()), listed)
	for _, filter := range []domain.Filter{{Text: "healthz"}, {PathPrefix: "/healthz"}, {Name: "shop", StatusMin: 500, StatusMax: 599}} {
		want := expectedPage(msgs, domain.Query{Scope: scopeLive, Filter: filter}, f.now())
		assertIDs(t, "List("+describeFilter(filter)+")", want, listAll(t, s, scopeLive, filter, 7, f.now()))
	}
	ids := make([]string, 0, len(tallies))
	for _, tally := range tallies {
		assertNotFound(t, s, scopeLive, tally.ID, f.now())
		assertNotFound(t, s, scopeLive, tally.Reference, f.now())
		ids = append(ids, tally.ID)
	}
	if found, err := s.Lookup(t.Context(), scopeLive, ids); err != nil || len(found) != 0 {
		t.Errorf("Lookup of the tallies' ids = %d messages, %v; want none", len(found), err)
	}

	from, to := statsRange(f)
	bound := func(v float64) *time.Duration { d := millis(v); return &d }
	for _, tc := range []struct {
		interval string
		filter   domain.Filter
	}{
		{"1h", domain.Filter{}},
		{"15m", domain.Filter{Name: "billing"}},
		{"1h", domain.Filter{Text: "healthz"}},
		{"1h", domain.Filter{Text: "healthz?probe"}},
		{"1h", domain.Filter{Text: "items", Name: "shop"}},
		{"1h", domain.Filter{StatusMin: 500, StatusMax: 599}},
		{"1h", domain.Filter{MinDuration: bound(50)}},
		{"1h", domain.Filter{PathPrefix: "/v1/items/", Method: "GET"}},
		{"1h", domain.Filter{Route: "/v1/items/{id}"}},
	} {
		q := statsQuery(scopeLive, from, to, tc.interval, tc.filter)
		got := getStats(t, s, q, f.now())
		assertStats(t, all, q, f.now(), got)
		wantDropped := int64(len(counted(tallies, q, f.now())))
		if got.Total.Dropped != wantDropped || (tc.filter == domain.Filter{} && wantDropped != int64(len(tallies))) {
			t.Errorf("Stats(%s): %d dropped, want %d", describeStatsQuery(q), got.Total.Dropped, wantDropped)
		}
	}
	// The edges of the range: minutes only partly in it.
	q := statsQuery(scopeLive, from.Add(7*time.Minute+time.Microsecond), to.Add(-13*time.Minute), "1h", domain.Filter{})
	assertStats(t, all, q, f.now(), getStats(t, s, q, f.now()))
}

// A tally appended again, or under an id stored since as a message (a retry
// whose verdict changed with the rules), or a message appended again as a
// tally, counts once: Append is idempotent per id, whichever came first.
func testTalliesAreIdempotent(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs, tallies := talliesFixtures(f)
	mustAppend(t, s, append(append([]domain.Message{}, msgs...), tallies...))
	waitForStored(t, s, f.now(), msgs)
	again := make([]domain.Message, 0, len(msgs)+len(tallies))
	for _, m := range msgs {
		again = append(again, m.AsTally())
	}
	for _, tally := range tallies {
		whole := f.message(scopeLive, tally.CreatedAt, func(m *domain.Message) {
			m.ID, m.Reference, m.Name, m.Path, m.StatusCode = tally.ID, tally.Reference, tally.Name, tally.Path, tally.StatusCode
			m.Duration, m.HasDuration = tally.Duration, tally.HasDuration
		})
		again = append(again, tally, whole)
	}
	mustAppend(t, s, again)
	from, to := statsRange(f)
	q := statsQuery(scopeLive, from, to, "1h", domain.Filter{})
	got := getStats(t, s, q, f.now())
	if got.Total.Count != int64(len(msgs)+len(tallies)) || got.Total.Dropped != int64(len(tallies)) {
		t.Errorf("after appending every id again, as the other kind too: %d counted, %d dropped; want %d and %d",
			got.Total.Count, got.Total.Dropped, len(msgs)+len(tallies), len(tallies))
	}
	assertHolds(t, s, "after appending every id again", f.now(), msgs)
	for _, tally := range tallies {
		assertNotFound(t, s, scopeLive, tally.ID, f.now())
	}
}

// LookupTallies (ports.TallyLookup, which every store implements) finds the
// tallies stored in its scope, each with the digest of its submission where
// the store keeps it, and neither messages nor ids not stored nor another
// scope's: an Idempotency-Key's replay check answers the retry of a dropped
// exchange by it.
func testLookupTalliesFindsTalliesAlone(t *testing.T, s ports.MessageStore) {
	tl, ok := s.(ports.TallyLookup)
	if !ok {
		t.Fatalf("%T is not a ports.TallyLookup", s)
	}
	f := newFixtures(t)
	msgs, tallies := talliesFixtures(f)
	submitted := map[string]string{}
	for i := range tallies[:5] {
		tallies[i].Rules.Submitted = fmt.Sprintf("digest-%d", i)
		submitted[tallies[i].ID] = tallies[i].Rules.Submitted
	}
	mustAppend(t, s, append(slices.Clone(msgs), tallies...))
	waitForStored(t, s, f.now(), msgs)
	ids := []string{"never-stored"}
	var want []string
	for _, m := range msgs[:5] {
		ids = append(ids, m.ID)
	}
	for _, tally := range tallies[:5] {
		ids, want = append(ids, tally.ID), append(want, tally.ID)
	}
	slices.Sort(want)
	err := eventually(t.Context(), s, func() error {
		found, err := tl.LookupTallies(t.Context(), scopeLive, ids)
		if err != nil {
			return err
		}
		var got []string
		for _, tally := range found {
			got = append(got, tally.ID)
			if tally.Submitted != "" && tally.Submitted != submitted[tally.ID] {
				return fmt.Errorf("LookupTallies found %s with the digest %q, want %q or none", tally.ID, tally.Submitted, submitted[tally.ID])
			}
		}
		slices.Sort(got)
		if got = slices.Compact(got); !slices.Equal(got, want) {
			return fmt.Errorf("LookupTallies found %q, want the tallies %q", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found, err := tl.LookupTallies(t.Context(), scopeTest, ids); err != nil || len(found) != 0 {
		t.Errorf("LookupTallies in another scope: %v, %v; want none", found, err)
	}
	if found, err := tl.LookupTallies(t.Context(), scopeLive, nil); err != nil || len(found) != 0 {
		t.Errorf("LookupTallies of no ids: %v, %v; want none", found, err)
	}
}

// A message kept by a sample rule carries its rate, which reads return.
func testSampleRateRoundTrips(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := []domain.Message{
		f.message(scopeLive, f.ago(time.Hour), func(m *domain.Message) { m.SampleRate = 10 }),
		f.message(scopeLive, f.ago(2*time.Hour), func(m *domain.Message) { m.SampleRate = 1_000_000 }),
		f.message(scopeLive, f.ago(3*time.Hour)),
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	assertHolds(t, s, "after Append", f.now(), msgs)
}

package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// oldTraffic are messages and tallies of two applications over three hours
// starting at from, each expiring an hour after it was created, and a
// control message created at control, with the fixtures' retention.
func oldTraffic(f fixtures, from, control time.Time) (old []domain.Message, newer domain.Message) {
	names := []string{"shop", "billing"}
	statuses := []int{200, 204, 404, 500, 503}
	for i := range 90 {
		m := f.message(scopeLive, from.Add(time.Duration(i)*2*time.Minute+time.Duration(i)*time.Second), func(m *domain.Message) {
			m.Name = names[i%len(names)]
			m.StatusCode = statuses[i%len(statuses)]
			m.Path = fmt.Sprintf("/v1/items/%d", i%4)
			if i%5 != 4 {
				withDuration(float64(i%13)*9.5 + float64(i)*0.001)(m)
			}
			if i%3 == 0 {
				m.Route = "/v1/items/{id}"
			}
			m.ExpiresAt = m.CreatedAt.Add(time.Hour)
		})
		if i%4 == 0 {
			m = m.AsTally()
		}
		old = append(old, m)
	}
	return old, f.message(scopeLive, control)
}

// asIfReadable are copies of msgs readable at any time after they were
// visible: what statistics counted from rollups alone must match.
func asIfReadable(msgs []domain.Message) []domain.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ExpiresAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return out
}

// testRollupsOutliveMessages: a store that keeps rollups past its messages
// (ports.RollupKeeper) counts the part of a range before a query's
// RollupsOnlyBefore from them, the messages there expired, before and after
// the purge drops them, as the messages would have been counted, and says
// so; PurgeRollups deletes the rollups of the minutes before its time (a
// UTC midnight, as a store that deletes whole days may) and no other.
func testRollupsOutliveMessages(t *testing.T, s ports.MessageStore) {
	keeper, ok := s.(ports.RollupKeeper)
	if !ok {
		t.Skip("the store keeps no rollups past its messages (an optional capability: ports.RollupKeeper)")
	}
	f := newFixtures(t)
	// Across a UTC midnight, where a store that deletes whole days of
	// rollups (ports.RollupKeeper) cuts as one that deletes minutes.
	midnight := stats.AlignDown(f.ago(96*time.Hour), 24*time.Hour)
	first := midnight.Add(-90 * time.Minute)
	old, control := oldTraffic(f, first, f.ago(time.Hour))
	mustAppend(t, s, append(slices.Clone(old), control))
	last := old[len(old)-1].CreatedAt
	edge := stats.AlignUp(last.Add(time.Second), time.Minute)
	q := statsQuery(scopeLive, first, f.now(), "1h", domain.Filter{})
	q.RollupsOnlyBefore = edge
	waitForStored(t, s, f.now(), []domain.Message{control})

	check := func(when string, purgedBefore time.Time) {
		t.Helper()
		want := []domain.Message{control}
		for _, m := range old {
			if !m.CreatedAt.Before(stats.AlignDown(purgedBefore, time.Minute)) {
				want = append(want, m)
			}
		}
		for _, name := range []string{"", "billing"} {
			q := q
			q.Filter.Name = name
			got := getStats(t, s, q, f.now())
			if !got.RollupsOnlyBefore.Equal(edge) {
				t.Errorf("%s: Stats(%s) says rollups alone before %s, want %s", when, describeStatsQuery(q),
					domain.FormatTime(got.RollupsOnlyBefore), domain.FormatTime(edge))
			}
			assertStats(t, asIfReadable(want), q, f.now(), got)
		}
	}
	check("expired, not purged", time.Time{})
	if _, err := s.PurgeExpired(t.Context(), f.now()); err != nil {
		t.Fatalf("PurgeExpired: %v", err)
	}
	if got := listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()); len(got) != 1 || got[0].ID != control.ID {
		t.Fatalf("after the purge the store lists %d messages, want the control alone", len(got))
	}
	check("purged", time.Time{})

	if _, err := keeper.PurgeRollups(t.Context(), midnight); err != nil {
		t.Fatalf("PurgeRollups: %v", err)
	}
	check("rollups purged before midnight", midnight)
	// A query that sets no RollupsOnlyBefore counts the readable messages
	// alone, as before.
	plain := q
	plain.RollupsOnlyBefore = time.Time{}
	got := getStats(t, s, plain, f.now())
	if !got.RollupsOnlyBefore.IsZero() {
		t.Errorf("Stats without RollupsOnlyBefore says rollups alone before %s", domain.FormatTime(got.RollupsOnlyBefore))
	}
	assertStats(t, []domain.Message{control}, plain, f.now(), got)
}

package stats_test

import (
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// rollupRow is a store's row of rollups: one per scope, application and
// minute of created_at (the scope is left out here).
type rollupRow struct {
	name   string
	minute time.Time
	rollup stats.Rollup // stored encoded (adapters/rollupcodec)
}

// How a store keeps rollups and answers statistics from them.
func ExampleRollupBuilder() {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	msgs := []domain.Message{
		{Name: "shop", Path: "/v1/orders?page=2", StatusCode: 200, Duration: 12 * time.Millisecond, HasDuration: true},
		{Name: "shop", Path: "/v1/orders", StatusCode: 500, Duration: 30 * time.Millisecond, HasDuration: true},
		{Name: "billing", Path: "/v1/invoices", StatusCode: 404},
		{Name: "billing", Path: "/v1/invoices", StatusCode: 200}, // not visible yet at now
	}
	for i, created := range []time.Duration{0, 40 * time.Second, 9*time.Minute + 30*time.Second, 9*time.Minute + 58*time.Second} {
		msgs[i].CreatedAt = at.Add(created)
		msgs[i].VisibleAt = msgs[i].CreatedAt.Add(5 * time.Second)
		msgs[i].ExpiresAt = msgs[i].CreatedAt.Add(domain.DefaultRetention)
	}

	// Writing: in the transaction that stores messages, each message newly
	// stored is added to the rollup of its application and minute (read,
	// decoded, added to, encoded, written back).
	rollups := map[string]*stats.Rollup{}
	var rows []rollupRow
	for _, m := range msgs {
		key := m.Name + "@" + m.CreatedAt.Truncate(time.Minute).String()
		if rollups[key] == nil {
			rollups[key] = &stats.Rollup{}
			rows = append(rows, rollupRow{name: m.Name, minute: m.CreatedAt.Truncate(time.Minute)})
		}
		rollups[key].AddMessage(m)
	}
	for i, row := range rows {
		rows[i].rollup.Merge(rollups[row.name+"@"+row.minute.String()])
	}

	// Reading: a query rollups answer (a scope, or one application), at now.
	// The minute of billing's messages is refused: one is not visible yet.
	now := at.Add(10 * time.Minute)
	q, _ := stats.ParseQuery(map[string][]string{"from": {"2026-11-24T09:00:00Z"}, "interval": {"1h"}}, now)
	if !q.RollupsAnswer() {
		return // stream the messages into stats.NewBuilder(q) instead
	}
	b := stats.NewRollupBuilder(q, now)
	from, to := q.CountedRange()
	refused := 0
	for _, row := range rows {
		// The rows of the minutes that meet [from, to), of q.Filter.Name alone when set.
		if !row.minute.Before(to) || !row.minute.Add(time.Minute).After(from) {
			continue
		}
		if !b.AddRollup(row.minute, row.minute.Add(time.Minute), row.name, &row.rollup) {
			// Refused: count this minute of this application from its
			// messages readable at now that pass q.Filter.
			refused++
			for _, m := range msgs {
				if m.Name == row.name && m.CreatedAt.Truncate(time.Minute).Equal(row.minute) && m.Readable(now) && q.Filter.Matches(m) {
					b.Add(stats.SampleOf(m))
				}
			}
		}
	}
	s := b.Stats()
	fmt.Println("minutes refused:", refused)
	fmt.Println(s.Total.Count, s.Total.Status, s.Total.Duration)
	fmt.Println(s.TopPaths)
	fmt.Println(s.TopNames)
	// Output:
	// minutes refused: 1
	// 3 [0 1 0 1 1] {2 21 29.1 29.82}
	// [{/v1/orders 2 1} {/v1/invoices 1 1}]
	// [{shop 2 1} {billing 1 1}]
}

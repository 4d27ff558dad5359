package sqlite_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkIngestWhilePurging prices dropping an expired day file for the
// writes of another day: batches of 100 of the 1.8 KB submission are
// appended on a fixed schedule at half the rate the store reached just
// before (open model: a batch's latency counts from when it was due), for
// 6 s, while a day of 40,000 expired messages waits; in every other round
// PurgeExpired drops that day 2 s in. It reports the p99 of the rounds that
// purged and of those that did not, their ratio, the longest purge and the
// longest latency of a batch in flight while a purge ran.
//
//	go test -run '^$' -bench IngestWhilePurging -benchtime 1x ./adapters/sqlite/
func BenchmarkIngestWhilePurging(b *testing.B) {
	const (
		batch, expiredMessages, rounds = 100, 40_000, 6
		window, purgeAt                = 6 * time.Second, 2 * time.Second
	)
	now := time.Now().UTC()
	var quiet, purged, overlapping []time.Duration
	var purgeTook time.Duration
	for round := range rounds {
		purging := round%2 == 1
		s := mustOpenB(b, sqlite.Config{Dir: b.TempDir()})
		old := now.Add(-72 * time.Hour)
		for range expiredMessages / 500 {
			msgs := benchMessages(b, 500)
			for i := range msgs {
				msgs[i].CreatedAt, msgs[i].VisibleAt, msgs[i].ExpiresAt = old, old, now.Add(-time.Hour)
			}
			if err := s.Append(b.Context(), msgs); err != nil {
				b.Fatal(err)
			}
		}
		batches := make([][]domain.Message, 400)
		for i := range batches {
			batches[i] = benchMessages(b, batch)
		}
		// Capacity: as fast as one writer goes for a second.
		began, capacity := time.Now(), 0
		for i := 0; time.Since(began) < time.Second; i++ {
			if err := s.Append(b.Context(), batches[i%len(batches)]); err != nil {
				b.Fatal(err)
			}
			capacity += batch
		}
		interval := time.Duration(float64(time.Second) * batch / (float64(capacity) / time.Since(began).Seconds() / 2))
		type span struct{ from, to time.Time }
		purgeDone := make(chan error, 1)
		var purge span
		if purging {
			time.AfterFunc(purgeAt, func() {
				from := time.Now()
				_, err := s.PurgeExpired(b.Context(), now)
				purge = span{from, time.Now()}
				purgeDone <- err
			})
		}
		var appends []span
		var latencies []time.Duration
		start := time.Now()
		for i := 0; ; i++ {
			due := start.Add(time.Duration(i) * interval)
			if due.Sub(start) >= window {
				break
			}
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait) // the schedule of an open-model load, not a test's wait
			}
			if err := s.Append(b.Context(), batches[(i+7)%len(batches)]); err != nil {
				b.Fatal(err)
			}
			latencies = append(latencies, time.Since(due))
			appends = append(appends, span{due, time.Now()})
		}
		if purging {
			if err := <-purgeDone; err != nil {
				b.Fatal(err)
			}
			purged = append(purged, latencies...)
			purgeTook = max(purgeTook, purge.to.Sub(purge.from))
			for i, a := range appends {
				if a.from.Before(purge.to) && a.to.After(purge.from) {
					overlapping = append(overlapping, latencies[i])
				}
			}
		} else {
			quiet = append(quiet, latencies...)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	p99 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)*99/100].Microseconds()) / 1000
	}
	q, p := p99(quiet), p99(purged)
	b.ReportMetric(q, "p99-ms-quiet")
	b.ReportMetric(p, "p99-ms-purging")
	b.ReportMetric(p/q, "ratio")
	b.ReportMetric(float64(purgeTook.Microseconds())/1000, "purge-ms")
	overlapping = append(overlapping, 0) // none may have overlapped a short purge
	b.ReportMetric(float64(slices.Max(overlapping).Microseconds())/1000, "max-ms-during-purge")
}

// BenchmarkClearBodies prices taking out the bodies of a retention class's
// day of 20,000 messages (the 1.8 KB submission) past its bodies retention:
// each page rewritten with secure_delete, then the file rebuilt with VACUUM
// and its WAL truncated (dayfile.File.ClearBodies). It reports the purge's
// time and the day's bytes on disk before and after.
//
//	go test -run '^$' -bench ClearBodies -benchtime 1x ./adapters/sqlite/
func BenchmarkClearBodies(b *testing.B) {
	const messages = 20_000
	now := time.Now().UTC()
	old := now.Add(-72 * time.Hour)
	current := retentionOf(map[domain.RetentionClass][2]time.Duration{
		{Account: scope.Account, Rule: "payments"}: {30 * 24 * time.Hour, 24 * time.Hour}})
	for b.Loop() {
		dir := b.TempDir()
		s := mustOpenB(b, sqlite.Config{Dir: dir})
		for range messages / 500 {
			msgs := benchMessages(b, 500)
			for i := range msgs {
				msgs[i].CreatedAt, msgs[i].VisibleAt, msgs[i].ExpiresAt = old, old, now.Add(30*24*time.Hour)
				msgs[i].RetentionRule = "payments"
			}
			if err := s.Append(b.Context(), msgs); err != nil {
				b.Fatal(err)
			}
		}
		before := diskBytes(b, dir)
		began := time.Now()
		if _, err := s.PurgeRetention(b.Context(), now, current); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(began).Milliseconds()), "purge-ms")
		b.ReportMetric(float64(before)/1e6, "MB-before")
		b.ReportMetric(float64(diskBytes(b, dir))/1e6, "MB-after")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

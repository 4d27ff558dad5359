package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// BenchmarkErasure measures the subject index of the default store over
// REQLOG_BENCH_STORED messages (default 100,000) created over the last 24
// hours, each of one of stored/50 users (a user id and an e-mail address
// each, so 50 messages a user), and one subject of 500 more:
//
//	REQLOG_BENCH_STORED=1000000 go test -run '^$' -bench Erasure -benchtime 1x -timeout 2h ./adapters/sqlite/
//
// lookup: 2,000 lookups of one page (100) of a random user's messages, as
// GET /v1/subjects/messages and an erasure's step read them; p50 and p99
// reported. erase500: 5 times, the subject's 500 messages found, hidden,
// deleted with secure_delete and the WAL truncated (a step of the erasure
// job, then its expunge), while another goroutine appends batches of 100
// messages; ingested/s is that ingest's rate meanwhile. erase5000: the
// same twice with 5,000 messages, ten steps. Each time appends the
// subject's messages again first, untimed. All run a fixed count whatever
// b.N: use -benchtime 1x.
func BenchmarkErasure(b *testing.B) {
	s, stored := benchStore(b)
	key := []byte("bench-subject-key")
	users := max(stored/50, 1)
	userHashes := func(u int) []string {
		return []string{rules.SubjectHash(key, fmt.Sprintf("u-%d", u)), rules.SubjectHash(key, fmt.Sprintf("user%d@example.com", u))}
	}
	now := time.Now().UTC().Truncate(time.Minute)
	seeded := time.Now()
	appendAll(b, s, stored, func(i int) domain.Message {
		created := now.Add(-time.Duration(i+1) * (24 * time.Hour / time.Duration(stored)))
		return benchSubjectMessage(b, created, i%users, userHashes(i%users))
	})
	b.Logf("seeded %d messages of %d users in %s", stored, users, time.Since(seeded).Round(time.Second))

	b.Run("lookup", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		took := make([]time.Duration, 0, 2000)
		for range cap(took) {
			q := ports.SubjectQuery{Account: scope.Account, Hashes: userHashes(rng.IntN(users))[:1], Limit: 100}
			start := time.Now()
			refs, err := s.SubjectMessages(b.Context(), q)
			took = append(took, time.Since(start))
			if err != nil || len(refs) == 0 {
				b.Fatalf("SubjectMessages = %d refs, %v", len(refs), err)
			}
		}
		reportPercentiles(b, took)
	})

	b.Run("erase500", func(b *testing.B) { benchErase(b, s, key, now, 500, 5) })
	b.Run("erase5000", func(b *testing.B) { benchErase(b, s, key, now, 5000, 2) })
}

// eraseStep is the erasure job's default step (app.DefaultErasureStep).
const eraseStep = 500

// benchErase erases a subject of size messages spread over the 24 hours
// times times, as the erasure job does: found and hidden, then found and
// deleted, eraseStep messages a step, then expunged; while another
// goroutine appends batches of 100 messages into today's file (ingested/s),
// then that ingest alone for as long (ingested-alone/s).
func benchErase(b *testing.B, s *sqlite.Store, key []byte, now time.Time, size, times int) {
	subject := rules.SubjectHash(key, "ana@example.com")
	q := ports.SubjectQuery{Account: scope.Account, Hashes: []string{subject}, Limit: eraseStep}
	var took []time.Duration
	var ingested atomic.Int64
	var ingestTime time.Duration
	for i := range times {
		appendAll(b, s, size, func(j int) domain.Message {
			created := now.Add(-time.Duration(j+1) * (24 * time.Hour / time.Duration(size))).Add(time.Duration(i) * time.Microsecond)
			return benchSubjectMessage(b, created, -1, []string{subject})
		})
		ctx, stop := context.WithCancel(b.Context())
		var wg sync.WaitGroup
		wg.Go(func() { ingested.Add(ingestUntil(ctx, b, s, now)) })
		start := time.Now()
		hide := q
		for found := 0; found < size; {
			refs, err := s.SubjectMessages(b.Context(), hide)
			if err != nil || len(refs) == 0 {
				b.Fatalf("SubjectMessages = %d refs, %v; want %d more", len(refs), err, size-found)
			}
			if _, err := s.Hide(b.Context(), scope.Account, refs); err != nil {
				b.Fatal(err)
			}
			found += len(refs)
			after := refs[len(refs)-1].Cursor()
			hide.After = &after
		}
		hidden := time.Since(start)
		for deleted := 0; deleted < size; {
			refs, err := s.SubjectMessages(b.Context(), q)
			if err != nil || len(refs) == 0 {
				b.Fatalf("SubjectMessages = %d refs, %v; want %d more", len(refs), err, size-deleted)
			}
			n, err := s.Delete(b.Context(), scope.Account, refs)
			if err != nil || n != int64(len(refs)) {
				b.Fatalf("Delete = %d, %v; want %d", n, err, len(refs))
			}
			deleted += len(refs)
		}
		deleted := time.Since(start)
		if err := s.Expunge(b.Context()); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.Logf("found and hidden in %s, deleted at %s, expunged at %s", hidden, deleted, elapsed)
		took = append(took, elapsed)
		stop()
		wg.Wait()
		ingestTime += elapsed
	}
	reportPercentiles(b, took)
	b.ReportMetric(float64(ingested.Load())/ingestTime.Seconds(), "ingested/s")
	// The same ingest alone, as long, for comparison.
	ctx, stop := context.WithTimeout(b.Context(), ingestTime)
	defer stop()
	start := time.Now()
	b.ReportMetric(float64(ingestUntil(ctx, b, s, now))/time.Since(start).Seconds(), "ingested-alone/s")
}

// benchSubjectMessage is a message of user u (none when negative) indexed
// under hashes, with a body naming the user.
func benchSubjectMessage(b *testing.B, created time.Time, u int, hashes []string) domain.Message {
	return conformance.NewMessage(b, scope, created, func(m *domain.Message) {
		m.Method, m.Path = "POST", fmt.Sprintf("/v1/users/%d/orders", u)
		m.Request.Header = domain.Header{"X-User-Id": {fmt.Sprintf("u-%d", u)}, "Content-Type": {"application/json"}}
		m.Request.Body = fmt.Sprintf(`{"email":"user%d@example.com","items":[{"sku":"sku-%d","qty":2}],"note":"lorem ipsum dolor sit amet"}`, u, u%977)
		m.Response.Body = `{"status":"accepted","eta":"2 days"}`
		m.Subjects = hashes
	})
}

// appendAll appends n messages made by msg, 1,000 a batch.
func appendAll(b *testing.B, s *sqlite.Store, n int, msg func(i int) domain.Message) {
	batch := make([]domain.Message, 0, 1000)
	for i := range n {
		batch = append(batch, msg(i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// ingestUntil appends batches of 100 messages of random users until ctx
// ends, and returns how many it appended.
func ingestUntil(ctx context.Context, b *testing.B, s *sqlite.Store, now time.Time) int64 {
	var n int64
	for i := 0; ctx.Err() == nil; i++ {
		batch := make([]domain.Message, 100)
		for j := range batch {
			batch[j] = benchSubjectMessage(b, now.Add(-time.Duration(i*100+j)*time.Millisecond), 1_000_000+j, nil)
		}
		if err := s.Append(context.WithoutCancel(ctx), batch); err != nil {
			b.Error(err)
			return n
		}
		n += int64(len(batch))
	}
	return n
}

// reportPercentiles reports took's p50 and p99 in ms.
func reportPercentiles(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

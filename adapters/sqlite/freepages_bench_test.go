package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// BenchmarkFreePages prices what an erasure's expunge does to a day file's
// free pages against a VACUUM of the file: REQLOG_BENCH_STORED messages
// (default 100,000) in one day file, 500 of them of one subject deleted as
// an erasure deletes them; then zero: the free pages zeroed
// (dayfile.File.ZeroFreePages) and the WAL truncated; vacuum: VACUUM and the
// WAL truncated. Each reported once, in one run; use -benchtime 1x:
//
//	REQLOG_BENCH_STORED=200000 go test -run '^$' -bench FreePages -benchtime 1x -timeout 1h ./adapters/sqlite/
func BenchmarkFreePages(b *testing.B) {
	s, stored := benchStore(b)
	key := []byte("bench-subject-key")
	day := dayfile.DayOf(time.Now())
	subject := rules.SubjectHash(key, "ana@example.com")
	var erased []domain.Message
	appendAll(b, s, stored, func(i int) domain.Message {
		u := i % max(stored/50, 1)
		hashes := []string{rules.SubjectHash(key, fmt.Sprintf("u-%d", u))}
		if i%(stored/500) == 0 && len(erased) < 500 {
			hashes = []string{subject}
		}
		m := benchSubjectMessage(b, day.Add(time.Duration(i)*20*time.Millisecond), u, hashes)
		if hashes[0] == subject {
			erased = append(erased, m)
		}
		return m
	})
	if n, err := s.Delete(b.Context(), scope.Account, refsOf(erased)); err != nil || n != int64(len(erased)) {
		b.Fatalf("Delete = %d, %v", n, err)
	}
	if err := s.Expunge(b.Context()); err != nil { // the word index merged, as the job does first
		b.Fatal(err)
	}
	for _, vacuum := range []bool{false, true} {
		free, pages, err := s.FreePagesOfDay(b.Context(), day)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := s.RebuildDay(b.Context(), day, vacuum); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		name := map[bool]string{false: "zero", true: "vacuum"}[vacuum]
		b.ReportMetric(float64(took.Milliseconds()), name+"-ms")
		b.Logf("%s: %s, the file %d pages, %d of them free", name, took.Round(time.Millisecond), pages, free)
	}
}

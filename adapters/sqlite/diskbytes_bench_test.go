package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkDiskBreakdown appends the load tool's traffic (REQLOG_BENCH_CORPUS,
// as BenchmarkCompression) in batches of 100, as the side by side posts it,
// closes the store and reports, per message, the bytes of each table and
// index of the day files (dbstat's pages, summed over the files; "free" is
// the bytes left unused inside those pages, "freelist" the free pages) and
// the whole disk, at three page sizes, with the day file's dictionary or
// without.
//
//	REQLOG_BENCH_CORPUS=/tmp/corpus.jsonl go test -run '^$' -bench DiskBreakdown -benchtime 1x ./adapters/sqlite/
func BenchmarkDiskBreakdown(b *testing.B) {
	msgs := corpusMessages(b)
	for _, pageSize := range []int{16 << 10, 32 << 10, 64 << 10} {
		for _, dict := range []bool{false, true} {
			b.Run(fmt.Sprintf("dictionary=%t/page=%dKiB", dict, pageSize>>10), func(b *testing.B) {
				for range b.N {
					measureDiskBreakdown(b, dayfile.Layout{PageSize: pageSize, NoDictionary: !dict}, msgs)
				}
			})
		}
	}
}

// measureDiskBreakdown appends msgs to a new store laid out as layout and
// reports its bytes.
func measureDiskBreakdown(b *testing.B, layout dayfile.Layout, msgs []domain.Message) {
	{
		dir := b.TempDir()
		s, err := sqlite.NewWithLayout(b.Context(), sqlite.Config{Dir: dir}, layout)
		if err != nil {
			b.Fatal(err)
		}
		appendInBatches(b, s, msgs, 100)
		if err := s.Close(); err != nil { // checkpoints the WAL into the files
			b.Fatal(err)
		}
		n := float64(len(msgs))
		for name, bytes := range dayFileBytes(b, dir) {
			if float64(bytes)/n >= 2 {
				b.ReportMetric(float64(bytes)/n, name+"-B/msg")
			}
		}
		b.ReportMetric(float64(diskBytes(b, dir))/n, "disk-B/msg")
	}
}

// appendInBatches appends msgs to s, batch messages at a time.
func appendInBatches(b *testing.B, s *sqlite.Store, msgs []domain.Message, batch int) {
	b.Helper()
	for i := 0; i < len(msgs); i += batch {
		if err := s.Append(b.Context(), msgs[i:min(i+batch, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
}

// dayFileBytes sums, over the day files in dir, the bytes of each table's
// and index's pages (dbstat), those pages' unused bytes ("free") and the
// free pages ("freelist").
func dayFileBytes(b *testing.B, dir string) map[string]int64 {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "messages-*.db"))
	if err != nil {
		b.Fatal(err)
	}
	sums := map[string]int64{}
	for _, path := range files {
		func() {
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			rows, err := db.Query(`SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name`)
			if err != nil {
				b.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var (
					name          string
					bytes, unused int64
				)
				if err := rows.Scan(&name, &bytes, &unused); err != nil {
					b.Fatal(err)
				}
				sums[name] += bytes
				sums["free"] += unused
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			var freePages, pageSize int64
			if err := db.QueryRow(`SELECT freelist_count, page_size FROM pragma_freelist_count, pragma_page_size`).Scan(&freePages, &pageSize); err != nil {
				b.Fatal(err)
			}
			sums["freelist"] += freePages * pageSize
		}()
	}
	return sums
}

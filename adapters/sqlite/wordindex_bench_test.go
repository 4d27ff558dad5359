package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// BenchmarkWordIndex measures the word index's FTS5 merge settings against
// each other on the load tool's traffic (REQLOG_BENCH_CORPUS, as
// BenchmarkCompression), appended in batches of REQLOG_BENCH_BATCH (100
// unless set): ingest CPU, disk and the word index's own bytes per message,
// then the CPU of a first page of 20 for a rare word (3 of 30,000 messages
// of the corpus) and a common one (every message), and of the day's
// statistics with the rare word.
//
//	REQLOG_BENCH_CORPUS=/tmp/corpus.jsonl taskset -c 1 go test -run '^$' -bench WordIndex -benchtime 1x ./adapters/sqlite/
func BenchmarkWordIndex(b *testing.B) {
	batch := envInt(b, "REQLOG_BENCH_BATCH", 100)
	msgs := corpusMessages(b)
	for _, v := range []struct{ name, config string }{
		{"none", ""}, // no word index: what it costs
		{"fts5-defaults", ""},
		{"hashsize=16MiB", `INSERT INTO words(words, rank) VALUES('hashsize', 16777216)`},
		{"automerge=8", `INSERT INTO words(words, rank) VALUES('automerge', 8)`},
		{"automerge=16", `INSERT INTO words(words, rank) VALUES('automerge', 16)`},
		{"pgsz=16000", `INSERT INTO words(words, rank) VALUES('pgsz', 16000)`},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				measureWordIndex(b, dayfile.Layout{WordConfig: v.config}, v.name == "none", msgs, batch)
			}
		})
	}
}

// measureWordIndex appends msgs to a new store laid out as layout, with
// the word index or none, and reads them.
func measureWordIndex(b *testing.B, layout dayfile.Layout, none bool, msgs []domain.Message, batch int) {
	dir := b.TempDir()
	open := func() (*sqlite.Store, error) {
		return sqlite.NewWithLayout(b.Context(), sqlite.Config{Dir: dir}, layout)
	}
	if none {
		open = func() (*sqlite.Store, error) { return sqlite.NewWithoutWordIndex(b.Context(), sqlite.Config{Dir: dir}) }
	}
	s, err := open()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := float64(len(msgs))
	cpu := cpuTime(b)
	for i := 0; i < len(msgs); i += batch {
		if err := s.Append(b.Context(), msgs[i:min(i+batch, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/n, "ingest-cpu-µs/msg")

	now := time.Now().Add(time.Hour)
	const pages = 200
	if none {
		return // no q finds anything
	}
	for _, word := range []struct{ name, q string }{{"rare", "ord_zq7x3k9w"}, {"common", "application"}} {
		q := domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: word.q}}
		cpu = cpuTime(b)
		for range pages {
			if page, err := s.List(b.Context(), q, now); err != nil || len(page.Messages) == 0 {
				b.Fatalf("q=%s: %d messages, %v", word.q, len(page.Messages), err)
			}
		}
		b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/pages, "q-"+word.name+"-cpu-µs")
	}
	query, err := stats.ParseQuery(map[string][]string{"q": {"ord_zq7x3k9w"}}, now)
	if err != nil {
		b.Fatal(err)
	}
	query.Scope = scope
	cpu = cpuTime(b)
	for range pages {
		if _, err := s.Stats(b.Context(), query, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/pages, "stats-rare-cpu-µs")

	if err := s.Close(); err != nil { // checkpoints the WAL into the files
		b.Fatal(err)
	}
	b.ReportMetric(float64(diskBytes(b, dir))/n, "disk-B/msg")
	files, err := filepath.Glob(filepath.Join(dir, "messages-*"))
	if err != nil {
		b.Fatal(err)
	}
	var words int64
	for _, f := range files {
		words += pagesOf(b, f, "words_data")
	}
	b.ReportMetric(float64(words)/n, "words-B/msg")
}

// pagesOf is the bytes of the pages table takes in the SQLite file at path.
func pagesOf(b *testing.B, path, table string) int64 {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var bytes int64
	if err := db.QueryRow(`SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?`, table).Scan(&bytes); err != nil {
		b.Fatal(err)
	}
	return bytes
}

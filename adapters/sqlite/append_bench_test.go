package sqlite_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// submission18KB is docs/bench/submission-1.8kb.py's submission (1.8 KB: a
// dozen headers each way, a 900-byte JSON response body), created_at left
// to fill in.
const submission18KB = `{"name":"shop-frontend","created_at":%d,"ip_address":"203.0.113.9","method":"post","path":"/v1/orders?page=2","duration_ms":12.345,"request":{"header":{"Authorization":"Bearer sk_live_0123456789abcdef","Accept":"application/json","User-Agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36","X-Request-Id":"9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a","Accept-Encoding":"gzip, br","Content-Type":"application/json","Cookie":"session=abc; theme=dark"},"body":"{\"sku\":42,\"qty\":1,\"password\":\"hunter2\"}"},"response":{"status_code":201,"header":{"Content-Type":"application/json; charset=utf-8","Date":"Fri, 14 Mar 2025 12:00:00 GMT","Server":"envoy","Vary":"Accept-Encoding","X-Ratelimit-Remaining":998,"Set-Cookie":["session=def; HttpOnly"]},"body":"{\"id\":4711,\"status\":\"shipped\",\"customer\":{\"email\":\"ada@example.com\",\"token\":\"tok_abc\"},\"items\":[{\"sku\":\"SKU-00000\",\"name\":\"standard item\",\"qty\":0,\"price\":12.5},{\"sku\":\"SKU-00001\",\"name\":\"standard item\",\"qty\":1,\"price\":13.5},{\"sku\":\"SKU-00002\",\"name\":\"standard item\",\"qty\":2,\"price\":14.5},{\"sku\":\"SKU-00003\",\"name\":\"standard item\",\"qty\":3,\"price\":15.5},{\"sku\":\"SKU-00004\",\"name\":\"standard item\",\"qty\":4,\"price\":16.5},{\"sku\":\"SKU-00005\",\"name\":\"standard item\",\"qty\":5,\"price\":17.5},{\"sku\":\"SKU-00006\",\"name\":\"standard item\",\"qty\":6,\"price\":18.5},{\"sku\":\"SKU-00007\",\"name\":\"standard item\",\"qty\":7,\"price\":19.5},{\"sku\":\"SKU-00008\",\"name\":\"standard item\",\"qty\":8,\"price\":20.5},{\"sku\":\"SKU-00009\",\"name\":\"standard item\",\"qty\":9,\"price\":21.5},{\"sku\":\"SKU-00010\",\"name\":\"standard item\",\"qty\":10,\"price\":22.5},{\"sku\":\"SKU-00011\",\"name\":\"standard item\",\"qty\":11,\"price\":23.5}]}"}}`

// benchMessages parses n copies of the 1.8 KB submission as the service
// does, each with an id of its own.
func benchMessages(b *testing.B, n int) []domain.Message {
	b.Helper()
	policy := domain.DefaultPolicy()
	now := time.Now()
	batch, err := httpapi.ParseSubmissions(policy.Validator(), []byte(fmt.Sprintf(submission18KB, now.Add(-time.Minute).Unix())), now)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]domain.Message, n)
	for i := range msgs {
		id, err := domain.NewIdentity()
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = policy.NewMessage(scope, batch.Submissions[0], id, now)
	}
	return msgs
}

// cpuTime is the process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppend is the store's anchor: Append of batches of the 1.8 KB
// submission (the group committer's batches), no HTTP, with the word index
// and, to price it, without it.
// It reports messages per second, the process's CPU per message and the disk
// per message (the day file once closed).
//
//	go test -run '^$' -bench Append -benchtime 40x ./adapters/sqlite/
func BenchmarkAppend(b *testing.B) {
	for _, index := range []string{"words", "none"} {
		for _, batch := range []int{100, 500} {
			b.Run(fmt.Sprintf("batch=%d/index=%s", batch, index), func(b *testing.B) {
				dir := b.TempDir()
				open := sqlite.New
				if index == "none" {
					open = sqlite.NewWithoutWordIndex
				}
				s, err := open(b.Context(), sqlite.Config{Dir: dir})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				batches := make([][]domain.Message, b.N)
				for i := range batches {
					batches[i] = benchMessages(b, batch)
				}
				measureAppend(b, s, dir, batches, "msg")
			})
		}
	}
}

// measureAppend appends each of batches to s, whose directory is dir,
// and reports what per item (msg, exchange): items per second, the
// process's CPU per item and the disk per item (the day files once closed).
func measureAppend(b *testing.B, s *sqlite.Store, dir string, batches [][]domain.Message, per string) {
	cpu := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		if err := s.Append(b.Context(), batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N * len(batches[0]))
	b.ReportMetric(n/b.Elapsed().Seconds(), per+"s/s")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/n, "cpu-µs/"+per)
	if err := s.Close(); err != nil { // checkpoints the WAL into the file
		b.Fatal(err)
	}
	b.ReportMetric(float64(diskBytes(b, dir))/n, "disk-B/"+per)
}

func mustOpenB(b *testing.B, cfg sqlite.Config) *sqlite.Store {
	s, err := sqlite.New(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// diskBytes is what the day files of dir take on disk.
func diskBytes(b *testing.B, dir string) int64 {
	files, err := filepath.Glob(filepath.Join(dir, "messages-*"))
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, f := range files {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil {
			b.Fatal(err)
		}
		total += st.Blocks * 512
	}
	return total
}

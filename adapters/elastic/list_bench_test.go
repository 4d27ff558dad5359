package elastic

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esquery"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkListFirstPage: a first page of 20 fixtures.TrafficMessages from the real node,
// with replies uncompressed (the store's transport) and gzipped (Go's default
// transport): what a fetch costs the service in CPU and allocations, plus the
// node's time.
//
//	go test -run '^$' -bench ListFirstPage -benchmem ./adapters/elastic/
func BenchmarkListFirstPage(b *testing.B) {
	ctx := context.Background()
	base := elastictest.URL(b)
	cfg := Config{Addresses: []string{base}, IndexPrefix: "reqlog-bench-list", RefreshInterval: 100 * time.Millisecond}
	s, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, base+"/"+s.indices.Names().For(fixtures.TrafficMessages(1)[0].CreatedAt), nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
		_ = s.Close(ctx)
	})
	msgs := fixtures.TrafficMessages(200)
	for i := range msgs {
		msgs[i].CreatedAt = msgs[i].CreatedAt.Add(time.Duration(i) * time.Microsecond)
	}
	if err := s.Append(ctx, msgs); err != nil {
		b.Fatal(err)
	}
	now := msgs[0].CreatedAt.Add(time.Hour)
	q := domain.Query{Scope: domain.Scope{Account: "acme", Domain: "live"}, Limit: domain.DefaultLimit}
	fullPage := func(s *Store) error {
		page, err := s.List(ctx, q, now)
		if err == nil && len(page.Messages) != domain.DefaultLimit {
			err = fmt.Errorf("a page of %d messages, want %d", len(page.Messages), domain.DefaultLimit)
		}
		return err
	}
	fixtures.WaitFor(b, "the first page after the refresh", 30*time.Second, func() error { return fullPage(s) })
	gzipped := *s
	clientCfg := s.cfg.clientConfig()
	clientCfg.Transport = http.DefaultTransport.(*http.Transport).Clone() // asks for gzip
	gzipClient, err := esclient.New(clientCfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gzipClient.Close(ctx) })
	gzipped.queries = esquery.New(gzipClient, s.indices.Names())
	for _, c := range []struct {
		name string
		s    *Store
	}{{"plain", s}, {"gzip", &gzipped}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			began := processCPU(b)
			for b.Loop() {
				if err := fullPage(c.s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-began)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process has used: the service's side of a
// request, without the node's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package elastic

import (
	"testing"

	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
)

// BenchmarkEncodeBulk: the CPU Append spends before sending, per batch of 100.
//
//	go test -run '^$' -bench EncodeBulk -benchmem ./adapters/elastic/
func BenchmarkEncodeBulk(b *testing.B) {
	s, err := newUnopened(Config{Addresses: []string{"http://127.0.0.1:1"}})
	if err != nil {
		b.Fatal(err)
	}
	msgs := fixtures.TrafficMessages(100)
	body, _, _, err := s.encodeBulk(nil, msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := s.encodeBulk(nil, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

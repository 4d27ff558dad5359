package elastic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// benchMessages returns n messages shaped like cmd/reqlog-bench's traffic: 20
// headers and a 4 KB JSON response body.
func benchMessages(n int) []domain.Message {
	at := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	items := make([]string, 30)
	for i := range items {
		items[i] = fmt.Sprintf(`{"sku":"SKU-%05d","name":"standard warehouse item","qty":%d,"tags":["blue","large"]}`, i, i)
	}
	body := `{"id":4711,"status":"shipped","items":[` + strings.Join(items, ",") + `]}`
	header := domain.Header{}
	for i := range 10 {
		header[fmt.Sprintf("X-Header-%02d", i)] = []string{"some value of a header", "another"}
	}
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = domain.Message{
			ID: fmt.Sprintf("msg_%020d", i), Reference: fmt.Sprintf("ref_%020d", i), Account: "acme", Domain: "live",
			Name: "shop-frontend", IPAddress: "203.0.113.9", Method: "POST", Path: "/v1/orders?page=2", StatusCode: 201,
			Request:   domain.Content{Header: header, Body: `{"sku":42,"qty":1}`, ContentType: "application/json"},
			Response:  domain.Content{Header: header, Body: body, ContentType: "application/json"},
			CreatedAt: at, UpdatedAt: at, VisibleAt: at.Add(5 * time.Second), ExpiresAt: at.Add(30 * 24 * time.Hour),
		}
	}
	return msgs
}

// BenchmarkEncodeBulk: the CPU Append spends before sending, per batch of 100.
//
//	go test -run '^$' -bench EncodeBulk -benchmem ./adapters/elastic/
func BenchmarkEncodeBulk(b *testing.B) {
	s, err := newUnopened(Config{Addresses: []string{"http://127.0.0.1:1"}})
	if err != nil {
		b.Fatal(err)
	}
	msgs := benchMessages(100)
	body, _, err := s.encodeBulk(nil, msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.encodeBulk(nil, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

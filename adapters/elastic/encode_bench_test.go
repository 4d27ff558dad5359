package elastic

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
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

// BenchmarkReadBulkReply: the CPU Append spends on a reply of 500 created items,
// as Elasticsearch writes it whole and as bulkReplyFields filters it.
//
//	go test -run '^$' -bench ReadBulkReply -benchmem ./adapters/elastic/
func BenchmarkReadBulkReply(b *testing.B) {
	msgs := benchMessages(500)
	whole, filtered := []string{}, []string{}
	for i, m := range msgs {
		whole = append(whole, fmt.Sprintf(`{"create":{"_index":"reqlog-messages-2025.03.14","_id":%q,"_version":1,"result":"created",`+
			`"_shards":{"total":2,"successful":1,"failed":0},"_seq_no":%d,"_primary_term":1,"status":201}}`, m.ID, i))
		filtered = append(filtered, `{"create":{"status":201}}`)
	}
	for _, c := range []struct {
		name  string
		reply string
	}{
		{"whole", `{"took":17,"errors":false,"items":[` + strings.Join(whole, ",") + `]}`},
		{"filtered", `{"items":[` + strings.Join(filtered, ",") + `]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.reply)))
			b.ReportAllocs()
			for b.Loop() {
				var reply bulkReply
				if err := json.NewDecoder(strings.NewReader(c.reply)).Decode(&reply); err != nil {
					b.Fatal(err)
				}
				if err := checkBulk(msgs, 0, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSearchReply is the reply of a first page of 20 (21 hits asked) of
// benchMessages, as Elasticsearch writes it: _source without the full-text field.
func benchSearchReply(b *testing.B) []byte {
	msgs := benchMessages(domain.DefaultLimit + 1)
	hits := make([]string, len(msgs))
	for i, m := range msgs {
		source, err := json.Marshal(toDocument(m).Record)
		if err != nil {
			b.Fatal(err)
		}
		hits[i] = fmt.Sprintf(`{"_index":"reqlog-messages-2025.03.14","_id":%q,"_score":null,"_source":%s,"sort":["2025-03-14T12:00:00.000000000Z",%q]}`,
			m.ID, source, m.ID)
	}
	return []byte(`{"took":2,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":0,"failed":0},` +
		`"hits":{"max_score":null,"hits":[` + strings.Join(hits, ",") + `]}}`)
}

// BenchmarkReadSearchReply: the CPU List spends on the reply of a first page,
// sent plain and gzipped (as Elasticsearch answers a client accepting gzip).
//
//	go test -run '^$' -bench ReadSearchReply -benchmem ./adapters/elastic/
func BenchmarkReadSearchReply(b *testing.B) {
	reply := benchSearchReply(b)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(reply); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B, r io.Reader) {
		p := &pageReader{limit: domain.DefaultLimit}
		if err := p.readReply(r); err != nil || p.badHit != nil {
			b.Fatal(err, p.badHit)
		}
		if len(p.page.Messages) != domain.DefaultLimit || !p.page.HasMore {
			b.Fatalf("%d messages, has more %t", len(p.page.Messages), p.page.HasMore)
		}
	}
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(reply)))
		b.ReportAllocs()
		for b.Loop() {
			read(b, bytes.NewReader(reply))
		}
	})
	b.Run("gzip", func(b *testing.B) {
		b.SetBytes(int64(len(reply)))
		b.ReportAllocs()
		for b.Loop() {
			zr, err := gzip.NewReader(bytes.NewReader(zipped.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			read(b, zr)
		}
	})
}

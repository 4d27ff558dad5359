package esdoc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/adapters/record"
)

// BenchmarkEncodeCreates: the bulk body of 100 fixtures.TrafficMessages
// creates, written by AppendCreate ("append") and by encoding/json from the
// record's struct tags ("encoding-json": a json.Encoder without HTML
// escaping, the action line and the record), the simplest thing writing the
// same bytes (TestAppendJSONMatchesEncodingJSON in record).
//
//	go test -run '^$' -bench EncodeCreates -benchmem ./adapters/elastic/esdoc/
func BenchmarkEncodeCreates(b *testing.B) {
	msgs := fixtures.TrafficMessages(100)
	const index = "reqlog-messages-2026.11.27"
	var appended []byte
	for _, m := range msgs {
		appended = AppendCreate(appended, index, false, m)
	}
	type target struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
	}
	encode := func(buf *bytes.Buffer) {
		buf.Reset()
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		for _, m := range msgs {
			if err := enc.Encode(map[string]target{"create": {index, m.ID}}); err != nil {
				b.Fatal(err)
			}
			if err := enc.Encode(record.FromMessage(m)); err != nil {
				b.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if encode(&buf); !bytes.Equal(buf.Bytes(), appended) {
		b.Fatal("encoding/json wrote another body than AppendCreate")
	}
	b.Run("append", func(b *testing.B) {
		b.SetBytes(int64(len(appended)))
		b.ReportAllocs()
		var body []byte
		for b.Loop() {
			body = body[:0]
			for _, m := range msgs {
				body = AppendCreate(body, index, false, m)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(appended)))
		b.ReportAllocs()
		for b.Loop() {
			encode(&buf)
		}
	})
}

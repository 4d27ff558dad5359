package esquery

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// readHitsThrough reads the messages of a reply whose hits have the sources
// given, as List reads a page, with the reply read through reader(reply).
func readHitsThrough(t testing.TB, reader func(io.Reader) io.Reader, sources ...[]byte) []domain.Message {
	t.Helper()
	var reply bytes.Buffer
	reply.WriteString(`{"took":1,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{"max_score":null,"hits":[`)
	for i, source := range sources {
		if i > 0 {
			reply.WriteByte(',')
		}
		reply.WriteString(`{"_index":"i","_id":"x","_score":null,"_source":`)
		reply.Write(source)
		reply.WriteString(`,"sort":["2025-03-14T12:00:00.000000000Z","x"]}`)
	}
	reply.WriteString(`]}}`)
	p := &pageReader{limit: len(sources) + 1}
	if err := p.DecodeReply(reader(&reply)); err != nil || p.badHit != nil {
		t.Fatalf("read %s: %v, %v", reply.String(), err, p.badHit)
	}
	return p.page.Messages
}

// Strings longer than the read buffer and the string slab, dense with escapes
// or multi-byte text, read through readers that cut them anywhere, read as
// encoding/json reads them; and the messages of a page stay as read while
// later pages are read by the same pooled readers (ReadString cuts them
// from arrays it never writes again).
func TestPagesOfLongStringsStayAsRead(t *testing.T) {
	dense := `{"sku":"SKU-00042","name":"standard \"warehouse\" item","tags":["a\\b"]},`
	var sources [][]byte
	const chunk = 32 << 10 // the size of the reply reader's buffer and of its string slabs
	for _, size := range []int{1, 7, 8, 9, 100, chunk - 3, chunk + 5, chunk + 1, 3 * chunk} {
		for _, unit := range []string{dense, "é日🚀\u2028", "\x01\n\t", "plain text ", "\xff<\xe2\x80>"} {
			body := strings.Repeat(unit, size/len(unit)+1)[:size]
			m := fixtures.EdgeMessages(esdoc.MaxStorableTime)[0]
			m.ID, m.Request.Body, m.Response.Body = fmt.Sprint(size, unit), body, body[size/2:]
			m.Request.Header = domain.Header{"X-Long": {body[:size/3], body}}
			sources = append(sources, esdoc.Append(nil, m))
		}
	}
	want := make([]domain.Message, len(sources))
	for i, source := range sources {
		var err error
		if want[i], err = record.DecodeJSON(source); err != nil {
			t.Fatalf("record.DecodeJSON(%.200s): %v", source, err)
		}
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "byte by byte": iotest.OneByteReader,
		"halves": iotest.HalfReader, "data with EOF": iotest.DataErrReader,
	}
	var kept [][]domain.Message
	for name, reader := range readers {
		for from := 0; from < len(sources); from += 7 {
			to := min(from+7, len(sources))
			got := readHitsThrough(t, reader, sources[from:to]...)
			if !reflect.DeepEqual(got, want[from:to]) {
				t.Fatalf("%s, documents %d to %d: not as encoding/json reads them", name, from, to)
			}
			kept = append(kept, got)
		}
	}
	i := 0
	for range readers {
		for from := 0; from < len(sources); from += 7 {
			if to := min(from+7, len(sources)); !reflect.DeepEqual(kept[i], want[from:to]) {
				t.Fatalf("page %d changed after later pages were read", i)
			}
			i++
		}
	}
}

// encoding/json, which the reply reader is measured against, reads the same
// pages from the same replies.
func TestEncodingJSONReadsTheSamePages(t *testing.T) {
	reply := string(benchSearchReply(t))
	for limit := range domain.DefaultLimit + 3 {
		reader, library := &pageReader{limit: limit + 1}, &pageReader{limit: limit + 1}
		if err := reader.DecodeReply(strings.NewReader(reply)); err != nil || reader.badHit != nil {
			t.Fatalf("the reply reader: %v, %v", err, reader.badHit)
		}
		if err := library.decodeWithEncodingJSON(strings.NewReader(reply)); err != nil || library.badHit != nil {
			t.Fatalf("encoding/json: %v, %v", err, library.badHit)
		}
		if !reflect.DeepEqual(reader.page, library.page) {
			t.Fatalf("a page of %d: the reply reader and encoding/json read different pages", limit+1)
		}
	}
}

// A hit whose time is not a time is a bad hit, not a broken reply.
func TestBadTimeIsABadHit(t *testing.T) {
	reply := `{"hits":{"hits":[{"_source":{"id":"a","created_at":"yesterday"}}]}}`
	p := &pageReader{limit: 5}
	if err := p.DecodeReply(strings.NewReader(reply)); err != nil || p.badHit == nil {
		t.Errorf("read %s: error %v, bad hit %v; want a bad hit", reply, err, p.badHit)
	}
}

// benchSearchReply is the reply of a first page of 20 (21 hits asked) of
// fixtures.TrafficMessages, as Elasticsearch writes it: _source without the full-text field.
func benchSearchReply(b testing.TB) []byte {
	msgs := fixtures.TrafficMessages(domain.DefaultLimit + 1)
	hits := make([]string, len(msgs))
	for i, m := range msgs {
		source := esdoc.Append(nil, m)
		hits[i] = fmt.Sprintf(`{"_index":"reqlog-messages-2025.03.14","_id":%q,"_score":null,"_source":%s,"sort":["2025-03-14T12:00:00.000000000Z",%q]}`,
			m.ID, source, m.ID)
	}
	return []byte(`{"took":2,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":0,"failed":0},` +
		`"hits":{"max_score":null,"hits":[` + strings.Join(hits, ",") + `]}}`)
}

// BenchmarkReadSearchReply: the CPU List spends on the reply of a first page:
// read by the reply reader, sent plain ("reader") and gzipped (as
// Elasticsearch answers a client accepting gzip: "reader-gzip"), and read by
// encoding/json with each _source a json.RawMessage ("encoding-json").
//
//	go test -run '^$' -bench ReadSearchReply -benchmem ./adapters/elastic/esquery/
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
	read := func(b *testing.B, decode func(p *pageReader) error) {
		p := &pageReader{limit: domain.DefaultLimit}
		if err := decode(p); err != nil || p.badHit != nil {
			b.Fatal(err, p.badHit)
		}
		if len(p.page.Messages) != domain.DefaultLimit || !p.page.HasMore {
			b.Fatalf("%d messages, has more %t", len(p.page.Messages), p.page.HasMore)
		}
	}
	for _, c := range []struct {
		name   string
		decode func(p *pageReader) error
	}{
		{"reader", func(p *pageReader) error { return p.DecodeReply(bytes.NewReader(reply)) }},
		{"reader-gzip", func(p *pageReader) error {
			zr, err := gzip.NewReader(bytes.NewReader(zipped.Bytes()))
			if err != nil {
				return err
			}
			return p.DecodeReply(zr)
		}},
		{"encoding-json", func(p *pageReader) error { return p.decodeWithEncodingJSON(bytes.NewReader(reply)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(reply)))
			b.ReportAllocs()
			for b.Loop() {
				read(b, c.decode)
			}
		})
	}
}

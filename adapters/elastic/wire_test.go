package elastic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reqlog/reqlog/adapters/internal/record"
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
	if err := p.readReply(reader(&reply)); err != nil || p.badHit != nil {
		t.Fatalf("read %s: %v, %v", reply.String(), err, p.badHit)
	}
	return p.page.Messages
}

// The one-pass reader reads every stored document as encoding/json reads
// the record (record.DecodeJSON).
func TestWireReadsDocumentsAsEncodingJSON(t *testing.T) {
	msgs := documentMessages()
	var sources [][]byte
	for _, m := range msgs {
		sources = append(sources, appendDocument(nil, m))
	}
	// Documents of template version 1: no route, duration or sizes; and null
	// where encoding/json leaves the zero value.
	sources = append(sources,
		[]byte(`{"id":"old","duration_ms":12.345,"reference":"r","account":"a","domain":"live","name":"n","method":"GET","path":"/p?q","status_code":200,`+
			`"request":{"header":[{"name":"A","values":["1"]},{"name":"A","values":["2"]},{"name":"B","values":[]}],"body":"{\"x\":1}","content_type":"t"},`+
			`"response":{"header":[],"body":"\u00e9\ud83d\ude80\ud800 \\/","content_type":""},`+
			`"created_at":"2025-03-14T12:00:00.000001Z","updated_at":"2025-03-14T12:00:00Z","visible_at":"2025-03-14T12:00:01+00:00","expires_at":"2025-04-14T12:00:00.5Z"}`),
		[]byte(`{"id":null,"extra":{"a":[1,true,false,null,-2.5e3,"s"]},"ip_address":null,"duration_ms":null,"request":{"header":null,"size":null},`+
			`"response":{"header":[{"name":"N","values":[null,"v"]}],"size":7},"status_code":-1,`+
			`"created_at":"2025-03-14T12:00:00Z","updated_at":"2025-03-14T12:00:00Z","visible_at":"2025-03-14T12:00:00Z","expires_at":"2025-03-14T12:00:00Z"}`),
	)
	// A byte at a time, every token crosses the end of what was read.
	for name, reader := range map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "byte by byte": iotest.OneByteReader,
	} {
		got := readHitsThrough(t, reader, sources...)
		if len(got) != len(sources) {
			t.Fatalf("%s: %d messages read, want %d", name, len(got), len(sources))
		}
		for i, source := range sources {
			want, err := record.DecodeJSON(source)
			if err != nil {
				t.Fatalf("record.DecodeJSON(%s): %v", source, err)
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Errorf("%s, document %d:\n got %+v\nwant %+v", name, i, got[i], want)
			}
		}
	}
}

// Strings longer than the read buffer and the string slab, dense with escapes
// or multi-byte text, read through readers that cut them anywhere, read as
// encoding/json reads them; and the messages of a page stay as read while
// later pages are read by the same pooled readers (string cuts them from
// arrays it never writes again).
func TestWireLongStringsAndKeptPages(t *testing.T) {
	dense := `{"sku":"SKU-00042","name":"standard \"warehouse\" item","tags":["a\\b"]},`
	var sources [][]byte
	for _, size := range []int{1, 7, 8, 9, 100, wireBufferSize - 3, wireBufferSize + 5, stringSlab + 1, 3 * stringSlab} {
		for _, unit := range []string{dense, "é日🚀\u2028", "\x01\n\t", "plain text ", "\xff<\xe2\x80>"} {
			body := strings.Repeat(unit, size/len(unit)+1)[:size]
			m := documentMessages()[0]
			m.ID, m.Request.Body, m.Response.Body = fmt.Sprint(size, unit), body, body[size/2:]
			m.Request.Header = domain.Header{"X-Long": {body[:size/3], body}}
			sources = append(sources, appendDocument(nil, m))
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

// A hit whose time is not a time is a bad hit, not a broken reply.
func TestWireBadTimeIsABadHit(t *testing.T) {
	reply := `{"hits":{"hits":[{"_source":{"id":"a","created_at":"yesterday"}}]}}`
	p := &pageReader{limit: 5}
	if err := p.readReply(strings.NewReader(reply)); err != nil || p.badHit == nil {
		t.Errorf("read %s: error %v, bad hit %v; want a bad hit", reply, err, p.badHit)
	}
}

// Strings are read as encoding/json reads them: the same text where it
// accepts the string, an error (or text left over) where it refuses it.
func FuzzWireString(f *testing.F) {
	for _, s := range append(documentStrings, `\"`, `\\`, `\u00e9\ud83d\ude80`, `\ud800`, `\ud800\u0041`, `\udc00\ud800`,
		`\x`, `\u12`, "\x00", `a\`, `\/\b\f\n\r\t`, "\xff\xfe", `\ud83d\ude8`, `\\\"`, strings.Repeat("é", 40000)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		data := []byte(`"` + s + `"`)
		var want string
		jsonErr := json.Unmarshal(data, &want)
		w := newWire(bytes.NewReader(data))
		got := w.string()
		readErr := w.err
		w.peek()
		atEnd := readErr == nil && errors.Is(w.err, io.ErrUnexpectedEOF)
		w.release()
		// Read a byte at a time, every escape crosses the end of what was read.
		w = newWire(iotest.OneByteReader(bytes.NewReader(data)))
		if got1, err1 := w.string(), w.err; got1 != got || (err1 == nil) != (readErr == nil) {
			t.Fatalf("%q: read byte by byte %q (%v), at once %q (%v)", data, got1, err1, got, readErr)
		}
		w.release()
		// text reads what string reads, through the scratch buffer.
		w = newWire(iotest.HalfReader(bytes.NewReader(data)))
		if text, err2 := w.text(), w.err; (err2 == nil) != (readErr == nil) || (err2 == nil && string(text) != got) {
			t.Fatalf("%q: text reads %q (%v), string %q (%v)", data, text, err2, got, readErr)
		}
		w.release()
		switch {
		case jsonErr == nil && (readErr != nil || !atEnd):
			t.Fatalf("%q: encoding/json reads %q, the wire fails (%v) or leaves text", data, want, readErr)
		case jsonErr == nil && got != want:
			t.Fatalf("%q: wire reads %q, encoding/json %q", data, got, want)
		case jsonErr != nil && readErr == nil && atEnd:
			t.Fatalf("%q: encoding/json refuses it (%v), the wire reads %q", data, jsonErr, got)
		}
	})
}

// BenchmarkWireVersusEncodingJSON: one page's hits decoded by the wire and by
// encoding/json as List did before (a json.Decoder, then json.Unmarshal of
// each hit's _source).
func BenchmarkWireVersusEncodingJSON(b *testing.B) {
	reply := benchSearchReply(b)
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(reply)))
		b.ReportAllocs()
		for b.Loop() {
			p := &pageReader{limit: domain.DefaultLimit}
			if err := p.readReply(bytes.NewReader(reply)); err != nil || len(p.page.Messages) != domain.DefaultLimit {
				b.Fatal(err, len(p.page.Messages))
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(reply)))
		b.ReportAllocs()
		for b.Loop() {
			var r struct {
				Hits struct {
					Hits []struct {
						Source json.RawMessage `json:"_source"`
					} `json:"hits"`
				} `json:"hits"`
			}
			if err := json.NewDecoder(bytes.NewReader(reply)).Decode(&r); err != nil {
				b.Fatal(err)
			}
			for _, h := range r.Hits.Hits[:domain.DefaultLimit] {
				if _, err := record.DecodeJSON(h.Source); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

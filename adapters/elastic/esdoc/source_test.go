package esdoc

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// readSource reads one _source through reader(source), as a page reads a hit's.
func readSource(t *testing.T, reader func(io.Reader) io.Reader, source string) (domain.Message, error) {
	t.Helper()
	w := esclient.NewReplyReader(reader(strings.NewReader(source)))
	defer w.Release()
	var sources Sources
	var r record.Record
	if err := sources.Read(w, &r); err != nil {
		t.Fatalf("read %s: %v", source, err)
	}
	return r.Message(), w.Refused()
}

// Sources reads every stored document as encoding/json reads the record's
// tags (record.DecodeJSON): documents with every field of the record set,
// and documents of earlier template versions.
func TestSourcesReadAsEncodingJSON(t *testing.T) {
	msgs := fixtures.EdgeMessages(MaxStorableTime)
	var sources []string
	for _, m := range msgs {
		sources = append(sources, string(Append(nil, m)))
	}
	// Documents of template version 1: no route, duration or sizes; and null
	// where encoding/json leaves the zero value.
	sources = append(sources,
		`{"id":"old","duration_ms":12.345,"reference":"r","account":"a","domain":"live","name":"n","method":"GET","path":"/p?q","status_code":200,`+
			`"request":{"header":[{"name":"A","values":["1"]},{"name":"A","values":["2"]},{"name":"B","values":[]}],"body":"{\"x\":1}","content_type":"t"},`+
			`"response":{"header":[],"body":"\u00e9\ud83d\ude80\ud800 \\/","content_type":""},`+
			`"created_at":"2025-03-14T12:00:00.000001Z","updated_at":"2025-03-14T12:00:00Z","visible_at":"2025-03-14T12:00:01+00:00","expires_at":"2025-04-14T12:00:00.5Z"}`,
		`{"id":null,"extra":{"a":[1,true,false,null,-2.5e3,"s"]},"ip_address":null,"duration_ms":null,"request":{"header":null,"size":null},`+
			`"response":{"header":[{"name":"N","values":[null,"v"]}],"size":7},"status_code":-1,`+
			`"created_at":"2025-03-14T12:00:00Z","updated_at":"2025-03-14T12:00:00Z","visible_at":"2025-03-14T12:00:00Z","expires_at":"2025-03-14T12:00:00Z"}`,
	)
	// A byte at a time, every token crosses the end of what was read.
	for name, reader := range map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "byte by byte": iotest.OneByteReader,
	} {
		for i, source := range sources {
			want, err := record.DecodeJSON([]byte(source))
			if err != nil {
				t.Fatalf("record.DecodeJSON(%s): %v", source, err)
			}
			got, refused := readSource(t, reader, source)
			if refused != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s, document %d (%v):\n got %+v\nwant %+v", name, i, refused, got, want)
			}
		}
	}
}

// The documents above set every member the record's json tags name, so a
// member added to the record that Sources does not read fails that test.
func TestEdgeMessagesSetEveryStoredMember(t *testing.T) {
	set := map[string]bool{}
	var visit func(prefix string, v reflect.Value)
	visit = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			f := v.Field(i)
			if f.Kind() == reflect.Struct {
				visit(prefix+name+".", f)
				continue
			}
			set[prefix+name] = set[prefix+name] || !f.IsZero()
		}
	}
	for _, m := range fixtures.EdgeMessages(MaxStorableTime) {
		visit("", reflect.ValueOf(record.FromMessage(m)))
	}
	for member, isSet := range set {
		// The subject index is written and searched, never read back into a
		// message: the edge messages' round trips leave it out, and
		// TestAppendStoresSubjects writes it.
		if !isSet && member != "subjects" {
			t.Errorf("no test document sets %s", member)
		}
	}
}

// A time that is no time is a value the record cannot hold, not a broken
// reply: the read goes on.
func TestSourcesRefuseABadTime(t *testing.T) {
	if _, refused := readSource(t, func(r io.Reader) io.Reader { return r }, `{"id":"a","created_at":"yesterday"}`); refused == nil {
		t.Error("a created_at of yesterday was read as a time")
	}
}

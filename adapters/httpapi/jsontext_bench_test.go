//go:build goexperiment.jsonv2

package httpapi

// The edge's decoder (submissions.go: one jsonbytes.Check pass, then a walk
// that jumps over the long values it noted) against the same decoding on Go's
// encoding/json/jsontext, the code of github.com/go-json-experiment/json: the
// drafts are built alike, strings unquoted by each library's own unquoter.
// jsontext checks syntax as it reads, so unknown members are skipped with
// SkipValue; it has no nesting bound under 10,000, so keeping the contract's
// 64 would take a token walk of every value decoding does not read. Run both
// in turn, on one core:
//
//	GOEXPERIMENT=jsonv2 go test -run JSONText -bench DecodeSubmissions -benchmem -cpu 1 ./adapters/httpapi/
//
// docs/benchmarks.md ("One JSON package") has the figures and the decision.

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

var jsontextOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// decodeWithJSONText decodes an array or a single submission as decode does.
func (d *decoding) decodeWithJSONText(dec *jsontext.Decoder, body []byte, maxItems int) (domain.Drafts, error) {
	if cap(d.text) < len(body) {
		d.text = make([]byte, 0, len(body))
	}
	d.text, d.items, d.fields, d.values = d.text[:0], d.items[:0], d.fields[:0], d.values[:0]
	dec.Reset(bytes.NewBuffer(body), jsontextOptions...)
	var drafts domain.Drafts
	switch dec.PeekKind() {
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return drafts, err
		}
		drafts.Multiple = true
		for dec.PeekKind() != ']' {
			if drafts.Count++; drafts.Count > maxItems || dec.PeekKind() != '{' {
				raw, err := dec.ReadValue()
				if err != nil {
					return drafts, err
				}
				if drafts.Count <= maxItems {
					d.items = append(d.items, domain.Draft{Kind: jsonbytes.KindOf(raw)})
				}
				continue
			}
			draft, err := d.draftWithJSONText(dec)
			if err != nil {
				return drafts, err
			}
			d.items = append(d.items, draft)
		}
		if _, err := dec.ReadToken(); err != nil {
			return drafts, err
		}
	case '{':
		draft, err := d.draftWithJSONText(dec)
		if err != nil {
			return drafts, err
		}
		d.items, drafts.Count = append(d.items, draft), 1
	default:
		return drafts, errors.New("neither an object nor an array")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return drafts, fmt.Errorf("after the document: %v", err)
	}
	drafts.Items = d.items
	return drafts, nil
}

// draftWithJSONText reads a submission object; its request and response are
// walked token by token, every other member read whole.
func (d *decoding) draftWithJSONText(dec *jsontext.Decoder) (domain.Draft, error) {
	draft := domain.Draft{Kind: jsonbytes.Object}
	scalars := [memberKeys]*domain.Value{keyName: &draft.Name, keyApp: &draft.App, keyCreatedAt: &draft.CreatedAt,
		keyIPAddress: &draft.IPAddress, keyMethod: &draft.Method, keyPath: &draft.Path,
		keyDurationMS: &draft.DurationMS, keyStatusCode: &draft.StatusCode}
	err := readObject(dec, func(key memberKey, known bool) error {
		if known && (key == keyRequest || key == keyResponse) {
			content, err := d.contentWithJSONText(dec)
			if key == keyRequest {
				draft.Request = content
			} else {
				draft.Response = content
			}
			return err
		}
		raw, err := dec.ReadValue()
		if err != nil || !known {
			return err
		}
		if target := scalars[key]; target != nil {
			*target = d.valueWithJSONText(raw)
		}
		return nil
	})
	return draft, err
}

func (d *decoding) contentWithJSONText(dec *jsontext.Decoder) (domain.DraftContent, error) {
	if kind := dec.PeekKind(); kind != '{' {
		raw, err := dec.ReadValue()
		return domain.DraftContent{Kind: jsonbytes.KindOf(raw)}, err
	}
	content := domain.DraftContent{Kind: jsonbytes.Object}
	err := readObject(dec, func(key memberKey, known bool) error {
		if known && key == keyHeader && dec.PeekKind() == '{' {
			var err error
			content.Header, err = d.headerWithJSONText(dec)
			return err
		}
		raw, err := dec.ReadValue()
		if err != nil || !known {
			return err
		}
		switch key {
		case keyHeader:
			content.Header = domain.DraftHeader{Kind: jsonbytes.KindOf(raw)}
		case keyBody:
			content.Body = d.valueWithJSONText(raw)
		case keyStatusCode:
			content.StatusCode = d.valueWithJSONText(raw)
		}
		return nil
	})
	return content, err
}

func (d *decoding) headerWithJSONText(dec *jsontext.Decoder) (domain.DraftHeader, error) {
	first := len(d.fields)
	if _, err := dec.ReadToken(); err != nil {
		return domain.DraftHeader{}, err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return domain.DraftHeader{}, err
		}
		f := domain.DraftHeaderField{Name: d.valueWithJSONText(name).Text, Array: dec.PeekKind() == '['}
		start := len(d.values)
		if f.Array {
			if _, err := dec.ReadToken(); err != nil {
				return domain.DraftHeader{}, err
			}
			for dec.PeekKind() != ']' {
				raw, err := dec.ReadValue()
				if err != nil {
					return domain.DraftHeader{}, err
				}
				d.values = append(d.values, d.valueWithJSONText(raw))
			}
			if _, err := dec.ReadToken(); err != nil {
				return domain.DraftHeader{}, err
			}
		} else {
			raw, err := dec.ReadValue()
			if err != nil {
				return domain.DraftHeader{}, err
			}
			d.values = append(d.values, d.valueWithJSONText(raw))
		}
		f.Values = d.values[start:len(d.values):len(d.values)]
		d.fields = append(d.fields, f)
	}
	_, err := dec.ReadToken()
	return domain.DraftHeader{Kind: jsonbytes.Object, Fields: d.fields[first:len(d.fields):len(d.fields)]}, err
}

// readObject reads an object, calling member with each key after its name is
// read; member reads the value.
func readObject(dec *jsontext.Decoder, member func(key memberKey, known bool) error) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		key, known := memberKeyOf(name)
		if err := member(key, known); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// valueWithJSONText is value with jsontext's unquoting.
func (d *decoding) valueWithJSONText(raw jsontext.Value) domain.Value {
	switch kind := jsonbytes.KindOf(raw); kind {
	case jsonbytes.String:
		start := len(d.text)
		d.text, _ = jsontext.AppendUnquote(d.text, raw)
		return domain.Value{Kind: kind, Text: d.text[start:len(d.text):len(d.text)]}
	case jsonbytes.Number, jsonbytes.Bool:
		return domain.Value{Kind: kind, Text: raw}
	default:
		return domain.Value{Kind: kind}
	}
}

func benchSubmissionBodies(tb testing.TB) map[string][]byte {
	items := make([]map[string]any, 12)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", i), "name": "standard item", "qty": i, "price": 12.5 + float64(i)}
	}
	responseBody, _ := json.Marshal(map[string]any{"id": 4711, "status": "shipped", "customer": map[string]any{
		"email": "ada@example.com", "token": "tok_abc"}, "items": items})
	one, err := json.Marshal(map[string]any{"name": "shop-frontend", "created_at": time.Now().Add(-time.Minute).Unix(),
		"ip_address": "203.0.113.9", "method": "post", "path": "/v1/orders?page=2", "duration_ms": 12.345,
		"request": map[string]any{"header": map[string]any{"Authorization": "Bearer sk_live_0123456789abcdef",
			"Accept": "application/json", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
			"X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a", "Accept-Encoding": "gzip, br",
			"Content-Type": "application/json", "Cookie": "session=abc; theme=dark"},
			"body": `{"sku":42,"qty":1,"password":"hunter2"}`},
		"response": map[string]any{"status_code": 201, "header": map[string]any{"Content-Type": "application/json; charset=utf-8",
			"Date": "Fri, 14 Mar 2025 12:00:00 GMT", "Server": "envoy", "Vary": "Accept-Encoding",
			"X-Ratelimit-Remaining": 998, "Set-Cookie": []any{"session=def; HttpOnly"}}, "body": string(responseBody)}})
	if err != nil {
		tb.Fatal(err)
	}
	batch := append([]byte("["), bytes.Repeat(append(one, ','), 100)...)
	batch[len(batch)-1] = ']'
	return map[string][]byte{"1.8 KB": one, "1.8 KB batch of 100": batch}
}

// Both decoders make the same drafts of the benchmark's bodies, so they
// compare the same work.
func TestJSONTextDecodesAlike(t *testing.T) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(nil))
	for name, body := range benchSubmissionBodies(t) {
		want, err := new(decoding).decode(body, domain.DefaultMaxBatch)
		if err != nil {
			t.Fatal(err)
		}
		got, err := new(decoding).decodeWithJSONText(dec, body, domain.DefaultMaxBatch)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: jsontext decoded\n%+v\njsonbytes\n%+v", name, got, want)
		}
	}
}

func BenchmarkDecodeSubmissions(b *testing.B) {
	bodies := benchSubmissionBodies(b)
	for _, name := range []string{"1.8 KB", "1.8 KB batch of 100"} {
		body := bodies[name]
		d := new(decoding)
		b.Run(name+"/jsonbytes", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := d.decode(body, domain.DefaultMaxBatch); err != nil {
					b.Fatal(err)
				}
				clear(d.ends)
			}
		})
		dec := jsontext.NewDecoder(bytes.NewBuffer(nil))
		b.Run(name+"/jsontext", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := d.decodeWithJSONText(dec, body, domain.DefaultMaxBatch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

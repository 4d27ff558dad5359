//go:build goexperiment.jsonv2

package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"encoding/json/jsontext"
)

// The hand-written scanner (jsonvalid.go, jsonscan.go) against a kept
// tokenizer, jsontext, on the same work: validate a POST body and split each
// submission into the members the parser reads, its own and those of its
// request and response. The tokenizer is Go's encoding/json/jsontext, behind
// GOEXPERIMENT=jsonv2 in Go 1.26: the code of github.com/go-json-experiment/json,
// whose releases the proxy serves require Go 1.26, above this module's 1.25.
// Run both in turn, on one core:
//
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench 'SplitSubmissions' -benchmem -cpu 1 -count 6 ./domain/
//
// docs/benchmarks.md has the figures and the decision.

// splitSubmission is a submission's members and its request's and response's.
type splitSubmission struct{ top, request, response members }

// splitWithScanner is the parser's own path: checkJSON validates the body once
// and notes the values' ends, then the members are read without re-validating.
func splitWithScanner(body []byte, out []splitSubmission) ([]splitSubmission, error) {
	sc := scratchPool.Get().(*scratch)
	defer sc.giveBack()
	shape, err := splitBody(body, DefaultMaxBatch, true, sc)
	if err != nil {
		return nil, err
	}
	split := func(top members) splitSubmission {
		s := splitSubmission{top: top}
		if kindOf(top[keyRequest]) == kindObject {
			s.request = readMembers(top[keyRequest], shape.ends)
		}
		if kindOf(top[keyResponse]) == kindObject {
			s.response = readMembers(top[keyResponse], shape.ends)
		}
		return s
	}
	if !shape.multiple {
		return append(out, split(shape.single)), nil
	}
	for _, item := range shape.items {
		if kindOf(item) != kindObject {
			return nil, errors.New("an item is not an object")
		}
		out = append(out, split(readMembers(item, shape.ends)))
	}
	return out, nil
}

// jsontextOptions make jsontext accept what json.Valid accepts. It has no
// nesting limit below 10,000 (WithDepthLimit is not implemented yet), so
// refusing a body nested more than MaxNesting deep would take a check of ours.
var jsontextOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// splitWithJSONText does the same with jsontext in one streaming pass: a
// submission's request and response are walked token by token, every other
// value read (and validated) whole. The decoder reads the body in place (a
// bytes.Buffer is not copied), so the values it returns are slices of body.
func splitWithJSONText(dec *jsontext.Decoder, body []byte, out []splitSubmission) ([]splitSubmission, error) {
	dec.Reset(bytes.NewBuffer(body), jsontextOptions...)
	readObject := func(m *members, descend func(memberKey) *members) error {
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return fmt.Errorf("not an object: %v", err)
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			key, known := memberKeyOf(name)
			if known && descend != nil && dec.PeekKind() == '{' {
				if inner := descend(key); inner != nil {
					if err := readObjectAt(dec, body, inner, m, key); err != nil {
						return err
					}
					continue
				}
			}
			value, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if known {
				m[key] = json.RawMessage(value)
			}
		}
		_, err := dec.ReadToken()
		return err
	}
	submission := func() error {
		out = append(out, splitSubmission{})
		s := &out[len(out)-1] // in place: a local would escape to the heap
		return readObject(&s.top, func(key memberKey) *members {
			switch key {
			case keyRequest:
				return &s.request
			case keyResponse:
				return &s.response
			}
			return nil
		})
	}
	var err error
	if dec.PeekKind() == '[' {
		if _, err = dec.ReadToken(); err != nil {
			return nil, err
		}
		for err == nil && dec.PeekKind() != ']' {
			err = submission()
		}
		if err == nil {
			_, err = dec.ReadToken()
		}
	} else {
		err = submission()
	}
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, errors.New("more than one value")
	}
	return out, nil
}

// readObjectAt reads the object that starts next in dec into inner, and
// records the whole object, a slice of body, as parent's key member.
func readObjectAt(dec *jsontext.Decoder, body []byte, inner, parent *members, key memberKey) error {
	start := dec.InputOffset() + int64(len(leadingSpace(dec.UnreadBuffer())))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return fmt.Errorf("not an object: %v", err)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		value, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if k, known := memberKeyOf(name); known {
			inner[k] = json.RawMessage(value)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	end := dec.InputOffset()
	parent[key] = json.RawMessage(body[start:end:end])
	return nil
}

// leadingSpace is the whitespace (and a separator) before the next token.
func leadingSpace(b []byte) []byte {
	i := 0
	for i < len(b) && (isJSONSpace(b[i]) || b[i] == ':' || b[i] == ',') {
		i++
	}
	return b[:i]
}

func splitBenchBodies(t testing.TB) map[string][]byte {
	small, err := json.Marshal(smallSubmissionForSplit())
	if err != nil {
		t.Fatal(err)
	}
	batch := append([]byte("["), bytes.Repeat(append(small, ','), 100)...)
	batch[len(batch)-1] = ']'
	return map[string][]byte{"1.8 KB": small, "1.8 KB batch of 100": batch}
}

// smallSubmissionForSplit is about 1.8 KB, like the hot path benchmark's.
func smallSubmissionForSplit() map[string]any {
	items := make([]map[string]any, 12)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", i), "name": "standard item", "qty": i, "price": 12.5 + float64(i)}
	}
	responseBody, _ := json.Marshal(map[string]any{"id": 4711, "status": "shipped", "customer": map[string]any{
		"email": "ada@example.com", "token": "tok_abc"}, "items": items})
	return map[string]any{"name": "shop-frontend", "created_at": time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC).Unix(),
		"ip_address": "203.0.113.9", "method": "post", "path": "/v1/orders?page=2", "duration_ms": 12.345,
		"request": map[string]any{"header": map[string]any{"Authorization": "Bearer sk_live_0123456789abcdef",
			"Accept": "application/json", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
			"X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a", "Accept-Encoding": "gzip, br",
			"Content-Type": "application/json", "Cookie": "session=abc; theme=dark"},
			"body": `{"sku":42,"qty":1,"password":"hunter2"}`},
		"response": map[string]any{"status_code": 201, "header": map[string]any{"Content-Type": "application/json; charset=utf-8",
			"Date": "Fri, 14 Mar 2025 12:00:00 GMT", "Server": "envoy", "Vary": "Accept-Encoding",
			"X-Ratelimit-Remaining": 998, "Set-Cookie": []any{"session=def; HttpOnly"}}, "body": string(responseBody)}}
}

// Both ways split the benchmark's bodies alike, so they compare the same work.
func TestSplitWithJSONTextAgrees(t *testing.T) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(nil))
	for name, body := range splitBenchBodies(t) {
		want, err := splitWithScanner(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := splitWithJSONText(dec, body, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("%s: jsontext split\n%q\nthe scanner\n%q", name, got, want)
		}
	}
	for _, bad := range []string{`[{"a":1},]`, `{"a":1} {}`, `{"request":{"a":tru}}`, `[{"a":"\x01"}]`} {
		if _, err := splitWithJSONText(dec, []byte(bad), nil); err == nil {
			t.Errorf("jsontext accepted %q", bad)
		}
		if _, err := splitWithScanner([]byte(bad), nil); err == nil {
			t.Errorf("the scanner accepted %q", bad)
		}
	}
}

func BenchmarkSplitSubmissions(b *testing.B) {
	bodies := splitBenchBodies(b)
	for _, name := range []string{"1.8 KB", "1.8 KB batch of 100"} {
		body := bodies[name]
		out := make([]splitSubmission, 0, 100)
		b.Run(name+"/scanner", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := splitWithScanner(body, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		dec := jsontext.NewDecoder(bytes.NewBuffer(nil))
		b.Run(name+"/jsontext", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := splitWithJSONText(dec, body, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

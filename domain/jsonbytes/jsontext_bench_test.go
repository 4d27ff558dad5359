//go:build goexperiment.jsonv2

package jsonbytes

// jsonbytes' routines against their counterparts in Go's
// encoding/json/jsontext (the code of github.com/go-json-experiment/json), on
// the bodies a submission carries: validating a JSON body (what content type
// derivation and redaction do to every body), unquoting a body string, quoting
// one. jsontext.AppendQuote does not write what encoding/json writes (U+2028
// and U+2029 as they are, invalid UTF-8 as U+FFFD's bytes, and an error), so
// the API's replies could not use it as it is. Run both in turn, on one core:
//
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench JSONText -benchmem -cpu 1 ./domain/jsonbytes/
//
// docs/benchmarks.md ("One JSON package") has the figures and the decision.

import (
	"encoding/json"
	"encoding/json/jsontext"
	"fmt"
	"strconv"
	"testing"
)

// responseBody is the 900-byte JSON response body of the 1.8 KB submission.
func responseBody(tb testing.TB) []byte {
	items := make([]map[string]any, 12)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", i), "name": "standard item", "qty": i, "price": 12.5 + float64(i)}
	}
	body, err := json.Marshal(map[string]any{"id": 4711, "status": "shipped", "customer": map[string]any{
		"email": "ada@example.com", "token": "tok_abc"}, "items": items})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func BenchmarkJSONText(b *testing.B) {
	body := responseBody(b)
	literal := []byte(strconv.Quote(string(body)))
	b.Run("validate/jsonbytes", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !IsValid(body) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("validate/jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
				b.Fatal("invalid")
			}
		}
	})
	buf := make([]byte, 0, 2*len(literal))
	b.Run("unquote/jsonbytes", func(b *testing.B) {
		b.SetBytes(int64(len(literal)))
		for b.Loop() {
			buf = AppendUnquoted(buf[:0], literal[1:len(literal)-1])
		}
	})
	b.Run("unquote/jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(literal)))
		for b.Loop() {
			buf, _ = jsontext.AppendUnquote(buf[:0], literal)
		}
	})
	b.Run("quote/jsonbytes", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			buf = AppendString(buf[:0], string(body))
		}
	})
	b.Run("quote/jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			buf, _ = jsontext.AppendQuote(buf[:0], body)
		}
	})
}

// Both unquote the benchmark's literal alike and validate its body alike.
func TestJSONTextAgreesOnTheBenchmarkBody(t *testing.T) {
	body := responseBody(t)
	literal := []byte(strconv.Quote(string(body)))
	got, err := jsontext.AppendUnquote(nil, literal)
	if err != nil || string(got) != string(AppendUnquoted(nil, literal[1:len(literal)-1])) {
		t.Fatalf("jsontext unquoted %q (%v)", got, err)
	}
	if !jsontext.Value(body).IsValid() || !IsValid(body) {
		t.Fatal("the body is not valid")
	}
}

package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// hostileBodies are 5 MiB documents nested far beyond MaxNesting.
func hostileBodies() map[string][]byte {
	const size = 5 << 20
	return map[string][]byte{
		"arrays":  []byte(strings.Repeat("[", size)),
		"objects": []byte(strings.Repeat(`{"a":`, size/5)),
		"closed":  []byte(strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1)),
	}
}

func TestDeepNestingIsRefusedBeforeDecoding(t *testing.T) {
	p := DefaultPolicy()
	parser := p.Parser() // as the server parses
	for name, body := range hostileBodies() {
		var err error
		allocs := testing.AllocsPerRun(1, func() { _, err = parser.ParseSubmissions(body, testNow) })
		var invalid *ValidationError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, fmt.Sprint(MaxNesting)) {
			t.Errorf("%s: %v, want a ValidationError stating the depth limit", name, err)
		}
		// A handful for the error itself: nothing grows with the body.
		if allocs > 10 {
			t.Errorf("%s: %v allocations to refuse the body", name, allocs)
		}
	}
	// The deepest legitimate body is far inside the limit.
	deepest := `{"messages":[` + validItem("request", `{"header":{"Accept":["a"]}}`) + `]}`
	if _, err := p.ParseSubmissions([]byte(deepest), testNow); err != nil {
		t.Errorf("envelope with header lists: %v", err)
	}
}

// checkJSON refuses nesting deeper than asked, counting only the brackets
// outside strings, and finds syntax errors as validJSON does.
func TestCheckJSONDepth(t *testing.T) {
	for _, c := range []struct {
		data  string
		limit int
		want  jsonVerdict
	}{
		{`[[]]`, 2, jsonValid},
		{`[[[]]]`, 2, jsonTooDeep},
		{`{"a":{"b":1}}`, 2, jsonValid},
		{`{"a":{"b":{}}}`, 2, jsonTooDeep},
		{`["[[[[", "{{{{"]`, 1, jsonValid},
		{`{"\"[[[":1}`, 1, jsonValid},
		{`["\\", [[1]]]`, 2, jsonTooDeep},
		{`[] [] [] []`, 1, jsonInvalid},
		{`[[[` + strings.Repeat("[", 100), 64, jsonTooDeep}, // unterminated: too deep is found first
		{`[1,,[[[]]]]`, 2, jsonInvalid},                     // the syntax error comes first
		{`7`, 0, jsonValid},
		{`[]`, 0, jsonTooDeep},
	} {
		if got := checkJSON(c.data, c.limit, nil); got != c.want {
			t.Errorf("checkJSON(%s, %d) = %v, want %v", c.data, c.limit, got, c.want)
		}
	}
}

// BenchmarkParseSubmissionsHostile shows that refusing hostile bodies costs time
// linear in their size: compare ns/op (MB/s stays flat) across sizes.
func BenchmarkParseSubmissionsHostile(b *testing.B) {
	p := DefaultPolicy()
	for _, shape := range []struct {
		name string
		make func(size int) string
	}{
		{"nested-arrays", func(n int) string { return strings.Repeat("[", n) }},
		{"nested-objects", func(n int) string { return strings.Repeat(`{"a":`, n/5) }},
		// Valid and flat, so it passes the depth check and reaches the decoder.
		{"flat-array", func(n int) string { return "[" + strings.Repeat("0,", n/2) + "0]" }},
		{"long-name", func(n int) string { return validItem("name", `"`+strings.Repeat("x", n)+`"`) }},
	} {
		for _, size := range []int{1 << 20, 2 << 20, 4 << 20} {
			body := []byte(shape.make(size))
			b.Run(fmt.Sprintf("%s/%dMiB", shape.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.ParseSubmissions(body, testNow); err == nil {
						b.Fatal("hostile body accepted")
					}
				}
			})
		}
	}
}

// validJSONCases are documents on both sides of json.Valid's line; they also seed
// FuzzJSONScan.
var validJSONCases = []string{
	``, ` `, `{}`, `[]`, ` [ ] `, `{"a":1}`, `{"a" : [1, 2.5e-3, -0, true, false, null, "x"]}`, `{"a":1,}`, `[1,]`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1]`, `[1}`, `]`, `}`, `[[]`, `[]]`, `"abc`,
	`"\u00e9\ud83d"`, `"\u00g0"`, `"\u00"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, "\"\t\"", "\"\x7f\xff\xfe\"", "\"a\x00\"",
	`0`, `-0`, `01`, `-`, `-a`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1e5.0`, `+1`, `00`, `123456789012345678901234567890`,
	`true`, `tru`, `truex`, `nul`, `null null`, `false`, `fals`, "\n\r\t 1 \n", "\v1", `[1] x`, `{"a":{"b":{"c":[{}]}}}`,
	`"\\`, `"\`, `{"\"":"\\"}`,
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := append([]string{
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
		strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
	}, validJSONCases...)
	for _, c := range cases {
		want := json.Valid([]byte(c))
		if got := validJSON(c); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid says %v", c, got, want)
		}
		if got := validJSON([]byte(c)); got != want {
			t.Errorf("validJSON([]byte(%.40q)) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// A body of tiny containers gets at most one span per spannedBytes, and the
// containers past that bound are still found by scanning.
func TestCheckJSONBoundsItsSpans(t *testing.T) {
	body := []byte("[" + strings.Repeat(`[1],{"a":[2]},`, 10000) + `["` + strings.Repeat("x", 100) + `"]]`)
	rec := jsonRecorder{values: true}
	if got := checkJSON(body, MaxNesting, &rec); got != jsonValid {
		t.Fatalf("checkJSON = %v", got)
	}
	spans := rec.spans
	if limit := len(body)/spannedBytes + 16; len(spans) != limit {
		t.Fatalf("%d spans for %d bytes, want the bound of %d", len(spans), len(body), limit)
	}
	items, err := batchItems(body, 30000, valueEndsOf(body, spans))
	if err != nil || len(items) != 20001 || string(items[20000]) != `["`+strings.Repeat("x", 100)+`"]` {
		t.Fatalf("batchItems found %d items, the last %.20q, error %v", len(items), items[len(items)-1], err)
	}
}

// An escaped literal, as clients that write / as \/ send every path, decodes on
// the stack and is copied once into its string.
func TestUnquoteAllocatesOnce(t *testing.T) {
	lit := []byte(`"\/v1\/orders\/` + strings.Repeat("a", 100) + `?q=caf\u00e9"`)
	if got := unquote(lit); got != "/v1/orders/"+strings.Repeat("a", 100)+"?q=café" {
		t.Fatalf("unquote = %q", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { unquote(lit) }); allocs != 1 {
		t.Errorf("unquote allocated %.0f times, want 1", allocs)
	}
}

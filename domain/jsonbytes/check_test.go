package jsonbytes

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Check refuses nesting deeper than asked, counting only the brackets outside
// strings, and finds syntax errors as IsValid does.
func TestCheckDepth(t *testing.T) {
	for _, c := range []struct {
		data  string
		limit int
		want  Verdict
	}{
		{`[[]]`, 2, Valid},
		{`[[[]]]`, 2, TooDeep},
		{`{"a":{"b":1}}`, 2, Valid},
		{`{"a":{"b":{}}}`, 2, TooDeep},
		{`["[[[[", "{{{{"]`, 1, Valid},
		{`{"\"[[[":1}`, 1, Valid},
		{`["\\", [[1]]]`, 2, TooDeep},
		{`[] [] [] []`, 1, Invalid},
		{`[[[` + strings.Repeat("[", 100), 64, TooDeep}, // unterminated: too deep is found first
		{`[1,,[[[]]]]`, 2, Invalid},                     // the syntax error comes first
		{`7`, 0, Valid},
		{`[]`, 0, TooDeep},
	} {
		if got := Check(c.data, c.limit, nil); got != c.want {
			t.Errorf("Check(%s, %d) = %v, want %v", c.data, c.limit, got, c.want)
		}
	}
}

// validCases are documents on both sides of json.Valid's line; they also seed
// FuzzJSONScan.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` [ ] `, `{"a":1}`, `{"a" : [1, 2.5e-3, -0, true, false, null, "x"]}`, `{"a":1,}`, `[1,]`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1]`, `[1}`, `]`, `}`, `[[]`, `[]]`, `"abc`,
	`"\u00e9\ud83d"`, `"\u00g0"`, `"\u00"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, "\"\t\"", "\"\x7f\xff\xfe\"", "\"a\x00\"",
	`0`, `-0`, `01`, `-`, `-a`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1e5.0`, `+1`, `00`, `123456789012345678901234567890`,
	`true`, `tru`, `truex`, `nul`, `null null`, `false`, `fals`, "\n\r\t 1 \n", "\v1", `[1] x`, `{"a":{"b":{"c":[{}]}}}`,
	`"\\`, `"\`, `{"\"":"\\"}`,
}

func TestIsValidAgreesWithEncodingJSON(t *testing.T) {
	cases := append([]string{
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth),
		strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	}, validCases...)
	for _, c := range cases {
		want := json.Valid([]byte(c))
		if got := IsValid(c); got != want {
			t.Errorf("IsValid(%.40q) = %v, json.Valid says %v", c, got, want)
		}
		if got := IsValid([]byte(c)); got != want {
			t.Errorf("IsValid([]byte(%.40q)) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// A body of tiny containers gets at most one span per NotedBytes, and the
// containers past that bound are still found by scanning.
func TestCheckBoundsItsSpans(t *testing.T) {
	body := []byte("[" + strings.Repeat(`[1],{"a":[2]},`, 10000) + `["` + strings.Repeat("x", 100) + `"]]`)
	notes := Notes{Values: true}
	if got := Check(body, 64, &notes); got != Valid {
		t.Fatalf("Check = %v", got)
	}
	if limit := len(body)/NotedBytes + 16; len(notes.Spans) != limit {
		t.Fatalf("%d spans for %d bytes, want the bound of %d", len(notes.Spans), len(body), limit)
	}
	ends := Ends{}
	ends.Add(body, notes.Spans)
	items := slices.Collect(Elements(body, ends))
	if len(items) != 20001 || string(items[20000]) != `["`+strings.Repeat("x", 100)+`"]` {
		t.Fatalf("Elements found %d items, the last %.20q", len(items), items[len(items)-1])
	}
}

// An escaped literal, as clients that write / as \/ send every path, decodes on
// the stack and is copied once into its string.
func TestUnquoteAllocatesOnce(t *testing.T) {
	lit := []byte(`"\/v1\/orders\/` + strings.Repeat("a", 100) + `?q=caf\u00e9"`)
	if got := Unquote(lit); got != "/v1/orders/"+strings.Repeat("a", 100)+"?q=café" {
		t.Fatalf("Unquote = %q", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { Unquote(lit) }); allocs != 1 {
		t.Errorf("Unquote allocated %.0f times, want 1", allocs)
	}
}

// Check notes the value of each member whose key it is asked about, at any
// depth, and not the members inside a value already noted.
func TestCheckNotesTheValuesOfChosenKeys(t *testing.T) {
	body := []byte(`{"a":1,"secret":{"secret":2},"list":[{"secret" : "x"}],"s":"secret"}`)
	notes := Notes{MasksValueOf: func(key []byte) bool { return string(key) == `"secret"` }}
	if got := Check(body, 64, &notes); got != Valid {
		t.Fatalf("Check = %v", got)
	}
	var noted []string
	for _, span := range notes.Masked {
		noted = append(noted, string(body[span.Start:span.End]))
	}
	if want := []string{`{"secret":2}`, `"x"`}; !slices.Equal(noted, want) {
		t.Errorf("noted %q, want %q", noted, want)
	}
}

// FuzzJSONScan checks the validator against encoding/json on any input, and on
// valid documents its depth limit, its spans and the element walk.
func FuzzJSONScan(f *testing.F) {
	for _, seed := range []string{`[[[]]]`, `{"a":{"b":[{}]}}`, `["[[[", "]]]"]`, `{"\"[":[1]}`, `1`, `[[`, `"\\"`,
		` [ 1 , "a,]" , {"x":[1,2]} , [] , -0.5e+3 , true , null ] `, `[]`, `[{}]`} {
		f.Add([]byte(seed), uint8(2))
	}
	for _, seed := range validCases {
		f.Add([]byte(seed), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint8) {
		if got, want := IsValid(data), json.Valid(data); got != want || IsValid(string(data)) != want {
			t.Fatalf("IsValid(%q) = %v, json.Valid says %v", data, got, want)
		}
		notes := Notes{Values: true}
		got := Check(data, int(limit), &notes)
		if !json.Valid(data) {
			if got == Valid {
				t.Fatalf("Check(%q, %d) = valid, json.Valid disagrees", data, limit)
			}
			return
		}
		if want := depth(data) > int(limit); (got == TooDeep) != want || got == Invalid {
			t.Fatalf("Check(%q, %d) = %v, want too deep: %v", data, limit, got, want)
		}
		if got == TooDeep {
			return
		}
		for _, span := range notes.Spans {
			if end := ValueEnd(data, span.Start); end != span.End || !strings.ContainsRune(`{["`, rune(data[span.Start])) {
				t.Fatalf("Check(%q) spans %d to %d, a value that ends at %d", data, span.Start, span.End, end)
			}
		}
		trimmed := bytes.TrimSpace(data)
		var want []json.RawMessage
		if trimmed[0] != '[' || json.Unmarshal(trimmed, &want) != nil {
			return
		}
		ends := Ends{}
		ends.Add(data, notes.Spans)
		checkElements(t, trimmed, ends, want)
	})
}

// checkElements fails unless Elements yields want, the elements of arr as
// json.Unmarshal reads them.
func checkElements(t *testing.T, arr []byte, ends Ends, want []json.RawMessage) {
	t.Helper()
	got := slices.Collect(Elements(arr, ends))
	if len(got) != len(want) {
		t.Fatalf("Elements(%q) = %q, want %q", arr, got, want)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("Elements(%q)[%d] = %q, want %q", arr, i, got[i], want[i])
		}
	}
}

// depth is the deepest nesting of arrays and objects in valid JSON.
func depth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzJSONDecode checks the walks against json.Unmarshal on valid documents:
// strings (escapes, surrogates, invalid UTF-8), object members with repeated
// keys, and array elements, found by scanning or through Check's spans.
func FuzzJSONDecode(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20ac\ud83d\ude00"`, `"\ud83d"`,
		`"\ud83d\u0041"`, `"\ude00\ud83d"`, "\"\xff\xfe ok \xc3\"", `"\u0000"`, `{"a":1,"a":{"b":[2]},"\u0061":"x"}`, `{"name":1,"na\u006de":"x","path\u0000":2,"app":null}`,
		` { "k" : [ 1 , "2" , { } ] , "z" : null } `, `[1, "two", [3], {"four": 4}, true, null]`, `{}`, `[]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.TrimSpace(data)
		notes := Notes{Values: true}
		if Check(trimmed, MaxDepth, &notes) != Valid {
			return
		}
		var ends Ends
		if len(trimmed)%2 == 1 { // both ways
			ends = Ends{}
			ends.Add(trimmed, notes.Spans)
		}
		switch KindOf(trimmed) {
		case String:
			var want string
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			if got := Unquote(trimmed); got != want {
				t.Fatalf("Unquote(%q) = %q, want %q", trimmed, got, want)
			}
			content := trimmed[1 : len(trimmed)-1]
			if got := AppendUnquoted(nil, content); string(got) != want {
				t.Fatalf("AppendUnquoted(%q) = %q, want %q", content, got, want)
			}
			if plain := PlainPrefix(content); !strings.HasPrefix(want, string(content[:plain])) {
				t.Fatalf("PlainPrefix(%q) = %d, but it decodes to %q", content, plain, want)
			}
		case Object:
			var want map[string]json.RawMessage
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			got := map[string]json.RawMessage{}
			for key, value := range Members(trimmed, ends) {
				got[Unquote(key)] = value
			}
			if len(got) != len(want) {
				t.Fatalf("Members(%q) = %q, want %q", trimmed, got, want)
			}
			for key, value := range want {
				if !bytes.Equal(got[key], value) {
					t.Fatalf("Members(%q)[%q] = %q, want %q", trimmed, key, got[key], value)
				}
			}
		case Array:
			var want []json.RawMessage
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			checkElements(t, trimmed, ends, want)
		}
	})
}

// FuzzAppendValidUTF8: any text reads as encoding/json writes and reads it
// back, each invalid byte as U+FFFD.
func FuzzAppendValidUTF8(f *testing.F) {
	for _, s := range []string{"", "plain", "\xff\xfe", "caf\xc3", "\xed\xa0\x80", "é\x80日本\xf4\x90\x80\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		encoded, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(encoded, &want); err != nil {
			t.Fatal(err)
		}
		if got := AppendValidUTF8([]byte("x"), s); string(got) != "x"+want {
			t.Fatalf("AppendValidUTF8(%q) = %q, want %q", s, got[1:], want)
		}
		if got := AppendValidUTF8(nil, []byte(s)); string(got) != want {
			t.Fatalf("AppendValidUTF8([]byte(%q)) = %q, want %q", s, got, want)
		}
	})
}

// Check notes how deeply a valid document nests: the least maxDepth under
// which it is valid.
func TestCheckNotesTheDepth(t *testing.T) {
	for _, c := range []struct {
		doc   string
		depth int
	}{
		{`12`, 0}, {`"[{"`, 0}, {`[]`, 1}, {` {} `, 1}, {`[[]]`, 2}, {`[1,[2,[3]],{}]`, 3}, {`{"a":{"b":[{}]},"c":[]}`, 4},
		{`[{"a":"]]]"},[[[]]]]`, 4}, {strings.Repeat("[", 70) + strings.Repeat("]", 70), 70},
	} {
		notes := Notes{}
		if got := Check(c.doc, MaxDepth, &notes); got != Valid || notes.Depth != c.depth {
			t.Errorf("Check(%.30q) = %v, depth %d, want valid, depth %d", c.doc, got, notes.Depth, c.depth)
		}
		if got := Check(c.doc, c.depth, nil); got != Valid {
			t.Errorf("Check(%.30q, %d) = %v, want valid", c.doc, c.depth, got)
		}
		if got := Check(c.doc, c.depth-1, nil); c.depth > 0 && got != TooDeep {
			t.Errorf("Check(%.30q, %d) = %v, want too deep", c.doc, c.depth-1, got)
		}
	}
}

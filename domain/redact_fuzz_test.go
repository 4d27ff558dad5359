package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func FuzzRedactJSON(f *testing.F) {
	for _, seed := range []string{
		`{"user":"bob","password":"hunter2"}`,
		`[{"a":{"token":[1,{"b":2}]}},{"Refresh-Token":null},"secret"]`,
		"{ \"z\" : 1 ,\n\t\"PASS_word\"  :  { } , \"a\":[ 1 , -2.5e-3 ] }",
		`{"pass\u0077ord":"x","a":"}\"{[","cvv":"\\"}`,
		`{"api_key":true,"api_key":false,"k":"v"}`,
		`{"\u00e9":1,"ssn":"\ud800"}`,
		`"password"`, `1`, `null`, `[]`, `{}`, "user=bob&password=hunter2", // the last a form by its shape
	} {
		f.Add(seed, "")
	}
	// A field of the deployer's own: longer than fieldSet.has folds on its stack,
	// or not ASCII.
	long := strings.Repeat("x", 70)
	f.Add(`{"`+long+`":1,"a":{"`+strings.ToUpper(long)+`":[2]}}`, long)
	f.Add(`{"Grüße":"x","grüsse":"y","GRÜßE":{"z":1}}`, "grüße")
	// A name that is not ASCII but folds to ASCII (the Kelvin sign folds to k).
	f.Add(`{"key":"s","KEY":"s","\u212Aey":"s"}`, "\u212Aey")
	// A field that folds to nothing (a policy refuses it) matches no key.
	f.Add("0=", "-")
	f.Fuzz(func(t *testing.T, body, extraField string) {
		fields := defaultFields
		if extraField != "" {
			fields = newFieldSet(append(slices.Clone(DefaultRedactedFields), extraField))
		}
		out := redactBody([]byte(body), "application/json", fields)
		checkRedacted(t, body, out, "application/json", fields)
		if want := walkRedactJSON(body, fields); validJSON(body) && out != want {
			t.Fatalf("redacting %q gave %q, the byte walker %q", body, out, want)
		}
		if again := redactBody([]byte(out), "application/json", fields); again != out {
			t.Fatalf("redacting twice changed %q to %q", out, again)
		}
	})
}

// FuzzTypeAndRedact: the parser's one check of a body without a Content-Type
// gives what contentType and then redactBody give.
func FuzzTypeAndRedact(f *testing.F) {
	for _, seed := range []string{`{"password":"x"}`, "\uFEFF{\"token\":1}", "\uFEFF\uFEFF[1]", "password=x", `[{"cvv":1}`,
		"a b", "", "1", " [] ", "\xff\xfe", `"token"`, "\uFEFF"} {
		f.Add([]byte(seed), "")
		f.Add([]byte(seed), "application/x-www-form-urlencoded")
	}
	f.Add([]byte(`{"a":1}`), " ")
	sniffers := []Sniffer{plainSniff, func([]byte) string { return formMediaType }}
	f.Fuzz(func(t *testing.T, body []byte, declared string) {
		h := Header{}
		if declared != "" {
			h["Content-Type"] = []string{declared}
		}
		for _, sniff := range sniffers {
			wantType := contentType(h, body, sniff)
			want := redactBody(body, wantType, defaultFields)
			if gotType, got := typeAndRedact(h, body, sniff, defaultFields); gotType != wantType || got != want {
				t.Fatalf("typeAndRedact(%q, %q) = %q, %q; want %q, %q", declared, body, gotType, got, wantType, want)
			}
		}
	})
}

func FuzzRedactedNamesMatchEncodingJSON(f *testing.F) {
	for _, seed := range []string{"password", "paſſword", "CLIENT_ſECRET", "Api_Key", "tok\u212Aen", "ToKeN"} {
		f.Add(seed)
	}
	f.Fuzz(checkEncodingJSONAgrees)
}

// FuzzRedactBody redacts any body under the content types that decide its
// path: none, prose, a form, JSON.
func FuzzRedactBody(f *testing.F) {
	for _, seed := range []string{`{"password":"x"}`, "password=x\n", "\uFEFF\uFEFF[a]=1&token=2", " password=x", `[{"cvv":1}`, "a b",
		`[token]="&{"password":1`, "pass%77ord[%zz]=1", "password%00x=1"} {
		for kind := range uint8(4) {
			f.Add(seed, kind)
		}
	}
	f.Fuzz(func(t *testing.T, body string, kind uint8) {
		ct := []string{"", "text/plain", formMediaType, "application/json"}[kind%4]
		out := redactBody([]byte(body), ct, defaultFields)
		checkRedacted(t, body, out, ct, defaultFields)
		if again := redactBody([]byte(out), ct, defaultFields); again != out {
			t.Fatalf("redacting %q as %q twice changed %q to %q", body, ct, out, again)
		}
	})
}

func FuzzRedactForm(f *testing.F) {
	for _, seed := range []string{
		"user=bob&password=hunter2&next=%2Fhome", "pass%77ord=x&pass+word=y", "password&&token=t=u",
		"a=1;password=2", "%zz=1&secret=2", "", "=", "&", "API-KEY=%", "user[password]=x&a%5Btoken%5D[]=y",
		`{"password":"x"}`, "\uFEFFpassword=x\n", "[a]=1&token=2\r\n", "[pAsswd=0 0", "{a}=1&password=2&n=\u00e9", "token\x00=", "\x00%5Btoken=0",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		out := redactBody([]byte(body), formMediaType, defaultFields)
		checkRedacted(t, body, out, formMediaType, defaultFields)
	})
}

// FuzzJSONScan checks the byte-level scanners against encoding/json: the validator
// on any input, and on valid documents its depth limit and the batch splitter.
func FuzzJSONScan(f *testing.F) {
	for _, seed := range []string{`[[[]]]`, `{"a":{"b":[{}]}}`, `["[[[", "]]]"]`, `{"\"[":[1]}`, `1`, `[[`, `"\\"`,
		` [ 1 , "a,]" , {"x":[1,2]} , [] , -0.5e+3 , true , null ] `, `[]`, `[{}]`} {
		f.Add([]byte(seed), uint8(2))
	}
	for _, seed := range validJSONCases {
		f.Add([]byte(seed), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint8) {
		if got, want := validJSON(data), json.Valid(data); got != want || validJSON(string(data)) != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
		rec := jsonRecorder{values: true}
		got := checkJSON(data, int(limit), &rec)
		spans := rec.spans
		if !json.Valid(data) {
			if got == jsonValid {
				t.Fatalf("checkJSON(%q, %d) = valid, json.Valid disagrees", data, limit)
			}
			return
		}
		if want := jsonDepth(data) > int(limit); (got == jsonTooDeep) != want || got == jsonInvalid {
			t.Fatalf("checkJSON(%q, %d) = %v, want too deep: %v", data, limit, got, want)
		}
		if got == jsonTooDeep {
			return
		}
		for _, span := range spans {
			if end := jsonValueEnd(data, span.start); end != span.end || !strings.ContainsRune(`{["`, rune(data[span.start])) {
				t.Fatalf("checkJSON(%q) spans %d to %d, a value that ends at %d", data, span.start, span.end, end)
			}
		}
		trimmed := bytes.TrimSpace(data)
		var want []json.RawMessage
		if trimmed[0] != '[' || json.Unmarshal(trimmed, &want) != nil {
			return
		}
		items, err := batchItems(trimmed, int(limit), valueEndsOf(data, spans))
		switch {
		case len(want) > int(limit):
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("batchItems(%q, %d) = %q, %v; want ErrTooLarge for %d items", data, limit, items, err, len(want))
			}
		case err != nil || len(items) != len(want):
			t.Fatalf("batchItems(%q) = %q, %v; want %q", data, items, err, want)
		default:
			for i := range want {
				if !bytes.Equal(items[i], want[i]) {
					t.Fatalf("batchItems(%q) item %d = %q, want %q", data, i, items[i], want[i])
				}
			}
		}
	})
}

// jsonDepth is the deepest nesting of arrays and objects in valid JSON.
func jsonDepth(data []byte) int {
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

// FuzzJSONDecode checks the one-walk decoder against json.Unmarshal on valid
// documents: strings (escapes, surrogates, invalid UTF-8), object members with
// repeated keys, and array elements, found by scanning or by checkJSON's spans.
func FuzzJSONDecode(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20ac\ud83d\ude00"`, `"\ud83d"`,
		`"\ud83d\u0041"`, `"\ude00\ud83d"`, "\"\xff\xfe ok \xc3\"", `"\u0000"`, `{"a":1,"a":{"b":[2]},"\u0061":"x"}`, `{"name":1,"na\u006de":"x","path\u0000":2,"app":null}`,
		` { "k" : [ 1 , "2" , { } ] , "z" : null } `, `[1, "two", [3], {"four": 4}, true, null]`, `{}`, `[]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.TrimSpace(data)
		rec := jsonRecorder{values: true}
		if checkJSON(trimmed, maxJSONDepth, &rec) != jsonValid {
			return
		}
		spans := rec.spans
		ends := valueEndsOf(trimmed, spans)
		if len(trimmed)%2 == 0 {
			ends = nil // both ways
		}
		switch kindOf(trimmed) {
		case kindString:
			var want string
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			if got := unquote(trimmed); got != want {
				t.Fatalf("unquote(%q) = %q, want %q", trimmed, got, want)
			}
		case kindObject:
			var want map[string]json.RawMessage
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			got := map[string]json.RawMessage{}
			for key, value := range memberLiterals(trimmed, ends) {
				got[unquote(key)] = value
			}
			if len(got) != len(want) {
				t.Fatalf("memberLiterals(%q) = %q, want %q", trimmed, got, want)
			}
			for key, value := range want {
				if !bytes.Equal(got[key], value) {
					t.Fatalf("memberLiterals(%q)[%q] = %q, want %q", trimmed, key, got[key], value)
				}
			}
			known := readMembers(trimmed, ends)
			for key, name := range memberKeyNames {
				if !bytes.Equal(known[key], want[name]) || (known[key] == nil) != (want[name] == nil) {
					t.Fatalf("readMembers(%q)[%s] = %q, want %q", trimmed, name, known[key], want[name])
				}
			}
		case kindArray:
			var want []json.RawMessage
			if err := json.Unmarshal(trimmed, &want); err != nil {
				t.Fatal(err)
			}
			got := slices.Collect(elements(trimmed, ends))
			if len(got) != len(want) {
				t.Fatalf("elements(%q) = %q, want %q", trimmed, got, want)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("elements(%q)[%d] = %q, want %q", trimmed, i, got[i], want[i])
				}
			}
		}
	})
}

// memberKeyNames spells each memberKey, as memberKeyOf reads it.
var memberKeyNames = [memberKeys]string{keyName: "name", keyApp: "app", keyCreatedAt: "created_at",
	keyIPAddress: "ip_address", keyMethod: "method", keyPath: "path", keyDurationMS: "duration_ms",
	keyStatusCode: "status_code", keyRequest: "request", keyResponse: "response", keyHeader: "header",
	keyBody: "body", keyMessages: "messages"}

// walkRedactJSON is the redaction of valid JSON as it was written before the
// validator's pass found the masks: validate, then walk the body again, byte by
// byte. It is the reference for the bytes kept around each mask.
func walkRedactJSON(body string, fields fieldSet) string {
	if !validJSON(body) {
		return body
	}
	var out strings.Builder
	copied := 0
	var open []byte // the enclosing '{' and '['
	expectKey := false
	for i := 0; i < len(body); {
		switch body[i] {
		case '{':
			open = append(open, '{')
			expectKey = true
			i++
		case '[':
			open = append(open, '[')
			expectKey = false
			i++
		case '}', ']':
			open = open[:len(open)-1]
			expectKey = false
			i++
		case ',':
			expectKey = open[len(open)-1] == '{'
			i++
		case '"':
			end := jsonStringEnd(body, i)
			if !expectKey || !redactsKey(fields, body, i, end) {
				i = end
				continue
			}
			start := end
			for start < len(body) && (body[start] == ':' || isJSONSpace(body[start])) {
				start++
			}
			stop := jsonValueEnd(body, start)
			out.WriteString(body[copied:start])
			out.WriteString(maskedJSONValue)
			copied, i, expectKey = stop, stop, false
		default: // ':', whitespace, numbers and literals
			expectKey = expectKey && body[i] != ':'
			i++
		}
	}
	if copied == 0 {
		return body
	}
	out.WriteString(body[copied:])
	return out.String()
}

package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/textproto"
	"reflect"
	"testing"
)

// FuzzHeaderObject submits arbitrary JSON as request and response header objects.
// An accepted header must equal what the contract's rules predict, computed here
// independently with net/textproto: canonical names, values of colliding names
// merged in order, scalars as their JSON text, masked names masked.
func FuzzHeaderObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"content-type":"text/html","Content-Type":["a","b"],"CONTENT-TYPE":1}`,
		`{"authorization":"Bearer k","Cookie":["a","b"],"set-cookie":[],"x-api-key":true}`,
		`{"x":[1.5e3,false,"\u00e9"],"x-y_z.~!":"v"}`, `{"bad name":"v"}`, `{"x":null}`, `{"x":{"a":1}}`,
		`{"x":[null]}`, `{"":"v"}`, `[]`, `"text"`, `{"a":"1","A":"2","a":"3"}`,
		`{"x-\u0041pi-key":"s","X-API-KEY":["t"],"a\u002db":"\ud800\u00e9"}`, "{\"a\":\"\xff\xfe\xfd\",\"b\":[\"\xff\",2]}",
		`{"a":"1","cookie":"c","A":["2",null],"b":"3"}`, `{"a":"1","b":"2","A":"3","B":["4","5"]}`,
	} {
		f.Add(seed)
	}
	p := DefaultPolicy()
	f.Fuzz(func(t *testing.T, header string) {
		if !json.Valid([]byte(header)) {
			return
		}
		body := validItem("request", `{"header":`+header+`}`, "response", `{"status_code":200,"header":`+header+`}`)
		batch, err := p.parse([]byte(body), testNow)
		want, ok := expectedHeader(header, p.maskSet())
		if err != nil {
			var invalid *ValidationError
			if !errors.As(err, &invalid) {
				t.Fatalf("header %s: error %v is not a ValidationError", header, err)
			}
			if ok {
				t.Fatalf("header %s refused (%v), but every name and value is acceptable", header, err)
			}
			return
		}
		if !ok {
			t.Fatalf("header %s accepted as %v, but it has a bad name or value", header, batch.Submissions[0].Request.Header)
		}
		for _, got := range []Header{batch.Submissions[0].Request.Header, batch.Submissions[0].Response.Header} {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("header %s normalised to %#v, want %#v", header, got, want)
			}
		}
	})
}

// expectedHeader is the oracle for FuzzHeaderObject; ok is false when the contract
// rejects the object.
func expectedHeader(raw string, masked map[string]bool) (Header, bool) {
	h := Header{}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	first, _ := dec.Token()
	if first == nil {
		return h, true // null: no headers
	}
	if first != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, _ := dec.Token()
		name := tok.(string)
		var value any
		if err := dec.Decode(&value); err != nil || !IsToken(name) {
			return nil, false
		}
		var values []string
		items, isList := value.([]any)
		if !isList {
			items = []any{value}
		}
		for _, item := range items {
			switch v := item.(type) {
			case string:
				values = append(values, v)
			case json.Number:
				values = append(values, v.String())
			case bool:
				values = append(values, map[bool]string{true: "true", false: "false"}[v])
			default:
				return nil, false
			}
		}
		canonical := textproto.CanonicalMIMEHeaderKey(name)
		if masked[canonical] {
			for i := range values {
				values[i] = Mask
			}
		}
		if existing, seen := h[canonical]; seen {
			values = append(existing, values...)
		} else if values == nil {
			values = []string{}
		}
		h[canonical] = values
	}
	return h, true
}

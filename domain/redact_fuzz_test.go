package domain

import (
	"slices"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/domain/jsonbytes"
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
		out, isJSON := redactBody([]byte(body), "application/json", fields)
		checkRedacted(t, body, out, "application/json", fields)
		checkIsJSON(t, []byte(body), out, isJSON)
		if want := walkRedactJSON(body, fields); jsonbytes.IsValid(body) && out != want {
			t.Fatalf("redacting %q gave %q, the byte walker %q", body, out, want)
		}
		if again, _ := redactBody([]byte(out), "application/json", fields); again != out {
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
			want, wantJSON := redactBody(body, wantType, defaultFields)
			if gotType, got, isJSON := typeAndRedact(h, body, sniff, defaultFields); gotType != wantType || got != want || isJSON != wantJSON {
				t.Fatalf("typeAndRedact(%q, %q) = %q, %q, %v; want %q, %q, %v", declared, body, gotType, got, isJSON, wantType, want, wantJSON)
			}
		}
	})
}

// checkIsJSON checks redactBody's isJSON, a fact the rules trust
// (Content.JSONBody): a body it calls JSON is kept as JSON within MaxNesting
// as the rules read it, past byte order marks and whitespace; and a body
// sent as an object or array within MaxNesting is called JSON.
func checkIsJSON(t *testing.T, body []byte, out string, isJSON bool) {
	t.Helper()
	if isJSON && jsonbytes.Check(strings.TrimLeft(out, " \t\r\n\ufeff"), MaxNesting, nil) != jsonbytes.Valid {
		t.Fatalf("%q redacted to %q: called JSON within %d deep, which it is not", body, out, MaxNesting)
	}
	if sent := body[byteOrderMarks(body):]; !isJSON && startsLikeJSON(sent) && jsonbytes.Check(sent, MaxNesting, nil) == jsonbytes.Valid {
		t.Fatalf("%q redacted to %q: JSON within %d deep, not called so", body, out, MaxNesting)
	}
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
		out, isJSON := redactBody([]byte(body), ct, defaultFields)
		checkRedacted(t, body, out, ct, defaultFields)
		checkIsJSON(t, []byte(body), out, isJSON)
		if again, _ := redactBody([]byte(out), ct, defaultFields); again != out {
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
		out, isJSON := redactBody([]byte(body), formMediaType, defaultFields)
		checkRedacted(t, body, out, formMediaType, defaultFields)
		checkIsJSON(t, []byte(body), out, isJSON)
	})
}

// walkRedactJSON is the redaction of valid JSON as it was written before the
// validator's pass found the masks: validate, then walk the body again, byte by
// byte. It is the reference for the bytes kept around each mask.
func walkRedactJSON(body string, fields fieldSet) string {
	if !jsonbytes.IsValid(body) {
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
			end := jsonbytes.StringEnd(body, i)
			if !expectKey || !fields.hasKeyLiteral([]byte(body[i:end])) {
				i = end
				continue
			}
			start := end
			for start < len(body) && (body[start] == ':' || jsonbytes.IsSpace(body[start])) {
				start++
			}
			stop := jsonbytes.ValueEnd(body, start)
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

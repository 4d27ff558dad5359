package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var defaultFields = DefaultPolicy().redactSet()

func TestRedactJSON(t *testing.T) {
	m := maskedJSONValue
	for _, c := range []struct{ name, in, want string }{
		{"string", `{"user":"bob","password":"hunter2"}`, `{"user":"bob","password":` + m + `}`},
		{"every value type", `{"token":12.5e3,"secret":true,"cvv":null,"ssn":{"a":[1,{"b":"c"}]},"api_key":["k1","k2"]}`,
			`{"token":` + m + `,"secret":` + m + `,"cvv":` + m + `,"ssn":` + m + `,"api_key":` + m + `}`},
		{"any depth and inside arrays", `[{"a":{"b":[{"access_token":"t1"}]}},{"refresh_token":"t2"}]`,
			`[{"a":{"b":[{"access_token":` + m + `}]}},{"refresh_token":` + m + `}]`},
		{"case, dashes and underscores ignored", `{"PassWord":"a","API-KEY":"b","apiKey":"c","Client_Secret":"d","card-number":"e","CardNumber":"f"}`,
			`{"PassWord":` + m + `,"API-KEY":` + m + `,"apiKey":` + m + `,"Client_Secret":` + m + `,"card-number":` + m + `,"CardNumber":` + m + `}`},
		{"escaped key", `{"pass\u0077ord":"x"}`, `{"pass\u0077ord":` + m + `}`},
		{"whitespace and order kept", "{ \"z\" : 1 ,\n\t\"password\"  :  \"p\" , \"a\":[ 1 , 2 ] }",
			"{ \"z\" : 1 ,\n\t\"password\"  :  " + m + " , \"a\":[ 1 , 2 ] }"},
		{"values that look like keys stay", `{"note":"password","list":["token","secret"],"x":{"y":"cvv"}}`,
			`{"note":"password","list":["token","secret"],"x":{"y":"cvv"}}`},
		{"strings holding quotes and braces", `{"a":"}\"{[","password":"p\"}{","b":"\\"}`,
			`{"a":"}\"{[","password":` + m + `,"b":"\\"}`},
		{"similar names stay", `{"token_type":"bearer","passwords_count":2,"username":"bob"}`,
			`{"token_type":"bearer","passwords_count":2,"username":"bob"}`},
		{"scalar document", `"password"`, `"password"`},
		{"duplicate keys", `{"password":"a","password":"b"}`, `{"password":` + m + `,"password":` + m + `}`},
		{"names encoding/json matches by Unicode folding", `{"paſſword":"a","client_\u017fecret":"b","\u212A":1}`,
			`{"paſſword":` + m + `,"client_\u017fecret":` + m + `,"\u212A":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := redactBody([]byte(c.in), "application/json", defaultFields)
			if got != c.want {
				t.Errorf("redacted\n%s\nto\n%s\nwant\n%s", c.in, got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("result is not valid JSON: %s", got)
			}
		})
	}
}

func TestRedactBodyByContentType(t *testing.T) {
	const secretJSON = `{"password":"hunter2"}`
	for _, c := range []struct {
		contentType, body string
		redacted          bool
	}{
		{"application/json", secretJSON, true},
		{"application/problem+json", secretJSON, true},
		{"application/vnd.api+json", secretJSON, true},
		{"application/x-www-form-urlencoded", "password=hunter2", true},
		{"text/plain", secretJSON, true}, // JSON is redacted whatever type it declares
		{"text/json", secretJSON, true},
		{"application/json, text/plain", secretJSON, true},
		{"", secretJSON, true},
		{"application/xml", "<password>hunter2</password>", false},
		{"text/plain", "password: hunter2", false},
		{"application/json", `{"password":"hunter2"`, true}, // cut short: redacted as far as it goes
		{"text/plain", `[{"password":"hunter2"},`, true},
		{"application/json", `password: {"hunter2"`, false}, // does not start like JSON
		{"text/plain", "user=bob&password=hunter2", true},   // a form by its shape, whatever it declares
		{"", "password=hunter2", true},
		{"application/octet-stream", "a=1&&password=hunter2&b=", true},
		{"text/plain", "see password=hunter2 here", false}, // prose: spaces
		{"text/plain", "password=hunter2&note", false},     // a pair without =
		{"text/html", `<a href="/?password=hunter2">`, false},
		// JSON declared as a form, as curl -d and jQuery send it by default
		{"application/x-www-form-urlencoded", secretJSON, true},
		{"application/x-www-form-urlencoded", ` [{"user":"bob"},{"password":"hunter2"}]`, true},
		{"application/x-www-form-urlencoded", `{"password":"hunter2"`, true},
		{"application/x-www-form-urlencoded", "[a]=1&password=hunter2", true}, // a form whose first key is bracketed
		{"application/x-www-form-urlencoded", "[a]=1&password=hunter2&note=caf\u00e9", true},
		{"application/x-www-form-urlencoded", "{a}=1&password=hunter2", true},
		{"application/x-www-form-urlencoded", "\uFEFF [a]=1&password=hunter2&x=\u00e9", true},
		{"application/x-www-form-urlencoded", "password=hunter2&note=caf\u00e9 au lait", true},
		// JSON after a UTF-8 byte order mark
		{"application/json", "\uFEFF" + secretJSON, true},
		{"", "\uFEFF" + `[{"password":"hunter2"}`, true},
		{"text/plain", "\uFEFFpassword: hunter2", false},
		// a form without its Content-Type, ended by a line end
		{"", "user=bob&password=hunter2\n", true},
		{"", "user=bob&password=hunter2\r\n", true},
		{"", "\npassword=hunter2&a=1", true},
		{"application/x-www-form-urlencoded", " password=hunter2&note=caf\u00e9", true},
		{"application/x-www-form-urlencoded", "\r\npassword=hunter2", true},
	} {
		got, _ := redactBody([]byte(c.body), c.contentType, defaultFields)
		if c.redacted == strings.Contains(got, "hunter2") {
			t.Errorf("%s body %q became %q; want redacted=%v", c.contentType, c.body, got, c.redacted)
		}
	}
	if got, _ := redactBody([]byte(secretJSON), "application/json", fieldSet{}); got != secretJSON {
		t.Errorf("with no redacted fields the body changed to %q", got)
	}
}

// Whatever key encoding/json reads into a redacted field, as a Go service behind
// reqlog would, is redacted.
func TestRedactsWhatEncodingJSONReadsAsRedacted(t *testing.T) {
	for _, key := range []string{"password", "PASSWORD", "Password", "paſſword", "PAſſWORD", "pasſword",
		"client_secret", "CLIENT_ſECRET", "api_key", "API_KEY", "\u0070assword", "ſſn", "ſecret", "private_\u212Aey",
		"ACCESS_TOKEN", "id_to\u212Aen", "Card_Number", "cvv", "CVC", "refresh_token", "Authorization", "passwd"} {
		checkEncodingJSONAgrees(t, key)
	}
}

// redactedFieldsStruct has a string field per default redacted name, tagged
// with it, as a Go service reading those fields declares them.
var redactedFieldsStruct = func() reflect.Type {
	fields := make([]reflect.StructField, len(DefaultRedactedFields))
	for i, name := range DefaultRedactedFields {
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + name + `"`)}
	}
	return reflect.StructOf(fields)
}()

// checkEncodingJSONAgrees fails if encoding/json reads key into a field tagged
// with a default redacted name and redaction keeps its value.
func checkEncodingJSONAgrees(t *testing.T, key string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{key: "hunter2"})
	if err != nil {
		return
	}
	target := reflect.New(redactedFieldsStruct)
	if json.Unmarshal(body, target.Interface()) != nil {
		return
	}
	read := false
	for i := range redactedFieldsStruct.NumField() {
		read = read || target.Elem().Field(i).String() != ""
	}
	if got, _ := redactBody(body, "application/json", defaultFields); read && strings.Contains(got, "hunter2") {
		t.Errorf("encoding/json reads %q as a redacted field, but %s was stored as %s", key, body, got)
	}
}

// A run of byte order marks is kept and skipped in one step: a step per mark
// copied the rest of the body at each, quadratic in their number, which a
// 5 MiB body of marks turned into minutes of CPU.
func TestByteOrderMarksAreSkippedAtOnce(t *testing.T) {
	marks := strings.Repeat("\uFEFF", 1000)
	body := []byte(marks + `{"password":"hunter2"}`)
	var out string
	allocs := testing.AllocsPerRun(5, func() { out, _ = redactBody(body, "", defaultFields) })
	if want := marks + `{"password":"` + Mask + `"}`; out != want {
		t.Errorf("redacted to %.60q..., want the marks kept and the password masked", out[len(marks):])
	}
	if allocs > 10 {
		t.Errorf("%.0f allocations for 1,000 marks: one or more per mark", allocs)
	}
}

func TestRedactForm(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"user=bob&password=hunter2&next=%2Fhome", "user=bob&password=" + Mask + "&next=%2Fhome"},
		{"Client-Secret=s&card_number=4111+1111&cvc=", "Client-Secret=" + Mask + "&card_number=" + Mask + "&cvc=" + Mask},
		{"pass%77ord=x&pass+word=y", "pass%77ord=" + Mask + "&pass+word=y"},
		{"password&&token=t=u", "password&&token=" + Mask},
		{"a=1;password=2", "a=1;password=2"}, // ';' is not a separator
		{"%zz=1&secret=2", "%zz=1&secret=" + Mask},
		{"nothing=secret", "nothing=secret"},
		{"user[name]=bob&user[password]=x&user%5Btoken%5D=y", "user[name]=bob&user[password]=" + Mask + "&user%5Btoken%5D=" + Mask},
		{"password[]=a&password[]=b", "password[]=" + Mask + "&password[]=" + Mask},
		{"a[credentials][api_key]=k&a[b]=c&[]=d", "a[credentials][api_key]=" + Mask + "&a[b]=c&[]=d"},
		{"passwords[0]=x", "passwords[0]=x"},
		// keys as the most lenient server (PHP) reads them
		{"pass%77ord[%zz]=x", "pass%77ord[%zz]=" + Mask},
		{"user%5Bpass%77ord%5D[%]=x", "user%5Bpass%77ord%5D[%]=" + Mask},
		{"password%00=x&a=1", "password%00=" + Mask + "&a=1"},
		{"user=bob&password%00x=x", "user=bob&password%00x=" + Mask},
		{"token\x00=x&a=1", "token\x00=" + Mask + "&a=1"},
		{"\x00%5Btoken=0&a%00[secret]=1", "\x00%5Btoken=" + Mask + "&a%00[secret]=" + Mask}, // Go reads past the NUL
		{"pass+word=x&%20password=y", "pass+word=x&%20password=" + Mask},
		{"a=1&password=x\r\n", "a=1&password=" + Mask + "\r\n"},
		{"a=1\n", "a=1\n"},
	} {
		if got, _ := redactBody([]byte(c.in), formMediaType, defaultFields); got != c.want {
			t.Errorf("redacted %q to %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSubmissionsAreRedacted(t *testing.T) {
	b := mustParse(t, validItem(
		"request", `{"header":{"Content-Type":"application/x-www-form-urlencoded"},"body":"user=bob&password=hunter2"}`,
		"response", `{"status_code":200,"body":"{\"access_token\":\"tok-123\",\"expires_in\":3600}"}`,
	))
	s := b.Submissions[0]
	if want := "user=bob&password=" + Mask; s.Request.Body != want {
		t.Errorf("request body %q, want %q", s.Request.Body, want)
	}
	if want := `{"access_token":"` + Mask + `","expires_in":3600}`; s.Response.Body != want || s.Response.ContentType != "application/json" {
		t.Errorf("response body %q (%s), want %q (application/json, derived)", s.Response.Body, s.Response.ContentType, want)
	}

	p := DefaultPolicy()
	p.RedactedFields = nil
	off, err := p.parse([]byte(validItem("request", `{"body":"{\"password\":\"kept\"}"}`)), testNow)
	if err != nil || off.Submissions[0].Request.Body != `{"password":"kept"}` {
		t.Errorf("with redaction off: %+v, %v", off, err)
	}
	p.RedactedFields = []string{"PIN"}
	custom, err := p.parse([]byte(validItem("request", `{"body":"{\"pin\":1234,\"password\":\"kept\"}"}`)), testNow)
	if err != nil || custom.Submissions[0].Request.Body != `{"pin":"`+Mask+`","password":"kept"}` {
		t.Errorf("with a custom list: %+v, %v", custom, err)
	}
}

func TestPolicyRejectsEmptyRedactedField(t *testing.T) {
	for _, name := range []string{"", "-", "_-_"} {
		p := DefaultPolicy()
		p.RedactedFields = []string{"password", name}
		if err := p.Validate(); err == nil {
			t.Errorf("redacted field %q accepted", name)
		}
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Errorf("default policy: %v", err)
	}
}

// jsonTree decodes valid JSON with numbers kept as written.
func jsonTree(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// isRedactedName is the oracle's matching: a name equal to a redacted one by
// strings.EqualFold (as encoding/json matches keys), ignoring '-' and '_'.
func isRedactedName(fields fieldSet, name string) bool {
	name = strings.NewReplacer("-", "", "_", "").Replace(name)
	for redacted := range fields.names {
		if strings.EqualFold(name, redacted) {
			return true
		}
	}
	return false
}

// maskTree is the redaction oracle: v with every value under a redacted key masked.
func maskTree(v any, fields fieldSet) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			if isRedactedName(fields, k) {
				out[k] = Mask
			} else {
				out[k] = maskTree(item, fields)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = maskTree(item, fields)
		}
		return out
	}
	return v
}

// checkRedacted fails unless out is in redacted with exactly the values of redacted
// fields masked, for a body of content type ct.
// looksLikeForm is the oracle's formShaped: URL query characters only, and an =
// in every non-empty pair, before any line ends at the end.
func looksLikeForm(body string) bool {
	body = strings.Trim(body, "\r\n")
	if !regexp.MustCompile(`^[A-Za-z0-9\-._~%!$&'()*+,;=:@/?\[\]]*$`).MatchString(body) {
		return false
	}
	for _, pair := range strings.Split(body, "&") {
		if pair != "" && !strings.Contains(pair, "=") {
			return false
		}
	}
	return true
}

func checkRedacted(t testing.TB, in, out, ct string, fields fieldSet) {
	t.Helper()
	const bom = "\uFEFF"
	if strings.HasPrefix(in, bom) {
		if !strings.HasPrefix(out, bom) {
			t.Fatalf("%q lost its byte order mark: %q", in, out)
		}
		checkRedacted(t, in[len(bom):], out[len(bom):], ct, fields)
		return
	}
	jsonStart := startsLikeJSON([]byte(in))
	switch {
	case json.Valid([]byte(in)) && (ct != formMediaType || jsonStart):
		if !json.Valid([]byte(out)) {
			t.Fatalf("valid JSON %q was redacted to invalid JSON %q", in, out)
		}
		if want, got := maskTree(jsonTree(t, in), fields), jsonTree(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("redacting %q gave %q: decoded %#v, want %#v", in, out, got, want)
		}
	case looksLikeForm(in) || (ct == formMediaType && !jsonStart):
		pairs := strings.TrimRight(in, "\r\n")
		if lineEnd := in[len(pairs):]; !strings.HasSuffix(out, lineEnd) {
			t.Fatalf("form %q redacted to %q: the line end %q is lost", in, out, lineEnd)
		}
		inPairs, outPairs := strings.Split(pairs, "&"), strings.Split(strings.TrimRight(out, "\r\n"), "&")
		if len(inPairs) != len(outPairs) {
			t.Fatalf("form %q redacted to %q: pairs changed", in, out)
		}
		for i, pair := range inPairs {
			key, _, hasValue := strings.Cut(pair, "=")
			want, names := pair, []string{phpKey(key)} // as PHP reads it, and as Go does
			if name, err := url.QueryUnescape(key); err == nil {
				names = append(names, strings.TrimSpace(name))
			}
			var segments []string
			for _, name := range names {
				segments = append(segments, name)
				segments = append(segments, strings.FieldsFunc(name, func(r rune) bool { return r == '[' || r == ']' })...)
			}
			if hasValue && slices.ContainsFunc(segments, func(s string) bool { return isRedactedName(fields, s) }) {
				want = key + "=" + Mask
			}
			if outPairs[i] != want {
				t.Fatalf("form %q redacted to %q: pair %d is %q, want %q", in, out, i, outPairs[i], want)
			}
		}
	case jsonStart:
		// Broken JSON is redacted as far as it goes: TestBrokenJSONIsRedacted.
	default:
		if in != out {
			t.Fatalf("a %q body was changed from %q to %q", ct, in, out)
		}
	}
	if !strings.Contains(out, Mask) && in != out {
		t.Fatalf("%q changed to %q without redacting anything", in, out)
	}
	if ct == formMediaType && !json.Valid([]byte(in)) {
		checkFormReadsNoSecret(t, in, out, fields)
	}
}

var percentEscape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// phpKey reads a form key as PHP does: '+' a space, each valid %XX its byte,
// other '%' as written, up to a decoded NUL, leading and trailing spaces
// dropped.
func phpKey(key string) string {
	key = strings.ReplaceAll(key, "+", " ")
	decoded := percentEscape.ReplaceAllStringFunc(key, func(escape string) string {
		b, _ := strconv.ParseUint(escape[1:], 16, 8)
		return string([]byte{byte(b)})
	})
	decoded, _, _ = strings.Cut(decoded, "\x00")
	return strings.TrimSpace(decoded)
}

// checkFormReadsNoSecret fails if a server reading out as a form, as Go's
// url.ParseQuery or PHP does, finds a redacted field with a value other than the
// mask.
func checkFormReadsNoSecret(t testing.TB, in, out string, fields fieldSet) {
	t.Helper()
	redacted := func(key string) bool {
		names := append([]string{key}, strings.FieldsFunc(key, func(r rune) bool { return r == '[' || r == ']' })...)
		return slices.ContainsFunc(names, func(name string) bool { return isRedactedName(fields, name) })
	}
	check := func(reader, key, value string) {
		if value = strings.TrimRight(value, "\r\n"); redacted(key) && value != Mask && value != "" { // line ends after the last pair are kept
			t.Fatalf("form %q redacted to %q: %s finds %s=%q", in, out, reader, key, value)
		}
	}
	values, _ := url.ParseQuery(out) // the pairs it can read
	for key, vs := range values {
		for _, v := range vs {
			check("url.ParseQuery", strings.TrimSpace(key), v)
		}
	}
	for pair := range strings.SplitSeq(out, "&") {
		key, value, _ := strings.Cut(pair, "=")
		check("PHP", phpKey(key), value)
	}
}

func TestRedactionOracleCatchesLeaks(t *testing.T) {
	// The oracle the fuzz targets rely on must notice a value that survived.
	ft := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		checkRedacted(ft, `{"password":"p"}`, `{"password":"p"}`, "application/json", defaultFields)
	}()
	if !ft.failed {
		t.Error("checkRedacted accepted an unredacted password")
	}
}

// fakeTB records a failure instead of failing the test.
type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}

func BenchmarkRedactJSON(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString(`{"id":12345,"user":{"name":"bob","password":"hunter2","tags":["a","b"]},"note":"x\"y"}`)
	}
	buf.WriteString("]")
	body := buf.Bytes()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		redactBody(body, "application/json", defaultFields)
	}
}

// A JSON body cut anywhere (as a client's size cap cuts it), a stream of
// documents whose last one is cut, or a cut body followed by garbage keeps none
// of its secrets: every value under a redacted key is masked as far as the body
// goes. The secrets are the only bytes Z in the document.
func TestBrokenJSONIsRedacted(t *testing.T) {
	doc := `{"user":"bob","password":"ZZZZ","n":1,"nested":{"list":[{"Access-Token":"ZZ\"ZZ"},7],` +
		`"cvv":ZZ,"secret":{"a":["ZZ",{"b":"ZZ"}]},"token":[ "ZZ" , {"x":"ZZ"} ]},"api_key" : "ZZ ZZ","tail":"ok"}`
	if !json.Valid([]byte(strings.ReplaceAll(strings.ReplaceAll(doc, "ZZ\\\"ZZ", "zz"), "ZZ,", "1,"))) {
		t.Fatal("the test document is not JSON once its secrets are replaced")
	}
	for cut := range len(doc) + 1 {
		for name, body := range map[string]string{
			"cut":       doc[:cut],
			"ndjson":    doc + "\n" + doc[:cut],
			"garbage":   doc[:cut] + ` ]]"} x`,
			"truncated": doc[:cut] + "…[truncated by reqlog capture: 123456 bytes total]",
		} {
			got, _ := redactBody([]byte(body), "application/json", defaultFields)
			if strings.Contains(got, "Z") {
				t.Fatalf("%s at %d: %q\nkept a secret: %q", name, cut, body, got)
			}
			if again, _ := redactBody([]byte(got), "application/json", defaultFields); again != got {
				t.Fatalf("%s at %d: redacting %q again gave %q", name, cut, got, again)
			}
		}
	}
}

// A body is decoded into a buffer reused from one POST to the next and copied
// once, into the message, redacted or not: decoding it to a string and masking
// that into another would allocate a redacted body twice.
//
// Under the race detector sync.Pool drops a quarter of what it is given, at
// random: a quarter of a copy more per parse on average, which 64 parses keep
// under the bound of one and a half.
func TestABodyIsCopiedOnce(t *testing.T) {
	for _, inner := range []string{
		`{"password":"hunter2","note":"` + strings.Repeat("x", 256<<10) + `"}`,
		`{"note":"` + strings.Repeat("x", 256<<10) + `"}`,
	} {
		literal, _ := json.Marshal(inner)
		body := []byte(validItem("request", `{"body":`+string(literal)+`}`))
		parse := func() string {
			b, err := DefaultPolicy().parse(body, testNow)
			if err != nil {
				t.Fatal(err)
			}
			return b.Submissions[0].Request.Body
		}
		first := parse() // the pool's buffer grows to the body here
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const parses = 64
		for range parses {
			if again := parse(); again != first {
				t.Fatalf("the same body decoded to %.40q, then %.40q", first, again)
			}
		}
		runtime.ReadMemStats(&after)
		if perParse := (after.TotalAlloc - before.TotalAlloc) / parses; perParse > uint64(len(inner))*3/2 {
			t.Errorf("a %d KiB body (redacted: %v) allocated %d KiB per parse: want one copy", len(inner)>>10,
				strings.Contains(first, Mask), perParse>>10)
		}
	}
}

package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// validItem is a complete submission; tests replace parts of it.
func validItem(overrides ...string) string {
	fields := map[string]string{
		"name":       `"shop"`,
		"created_at": `1795262400`,
		"method":     `"post"`,
		"path":       `"/orders?page=2"`,
		"request":    `{"body":"{\"a\":1}","header":{"Content-Type":"application/json"}}`,
		"response":   `{"status_code":201,"body":"ok","header":{}}`,
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		if overrides[i+1] == "<absent>" {
			delete(fields, overrides[i])
			continue
		}
		fields[overrides[i]] = overrides[i+1]
	}
	parts := make([]string, 0, len(fields))
	for k, v := range fields {
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func parse(t *testing.T, body string) (Batch, error) {
	t.Helper()
	return DefaultPolicy().parse([]byte(body), testNow)
}

func mustParse(t *testing.T, body string) Batch {
	t.Helper()
	b, err := parse(t, body)
	if err != nil {
		t.Fatalf("ParseSubmissions(%s): %v", body, err)
	}
	return b
}

func TestParseSubmissionsShapes(t *testing.T) {
	single := mustParse(t, validItem())
	if single.Multiple || len(single.Submissions) != 1 {
		t.Fatalf("single object: got %+v", single)
	}
	array := mustParse(t, "["+validItem()+","+validItem("name", `"other"`)+"]")
	if !array.Multiple || len(array.Submissions) != 2 || array.Submissions[1].Name != "other" {
		t.Fatalf("array: got %+v", array)
	}
	envelopeItem := `{"app":"sdk-app","created_at":1795262400,"method":"GET","path":"/","status_code":404,"request":{},"response":{"body":"nope"}}`
	env := mustParse(t, `{"messages":[`+envelopeItem+`]}`)
	if !env.Multiple || env.Submissions[0].Name != "sdk-app" || env.Submissions[0].StatusCode != 404 {
		t.Fatalf("envelope: got %+v", env)
	}
	// Only the exact key makes an envelope: "Messages" is an unknown field.
	if b := mustParse(t, validItem("Messages", "[]")); b.Multiple {
		t.Errorf(`a submission with an unknown "Messages" field was read as an envelope`)
	}
	// Outside the envelope, app and a top-level status_code are not substitutes.
	_, err := parse(t, envelopeItem)
	assertFields(t, err, "name", "response.status_code")
}

func TestParseSubmissionNormalises(t *testing.T) {
	b := mustParse(t, validItem(
		"name", `"  shop  "`,
		"ip_address", `"2001:DB8:0:0::1"`,
		"created_at", `1795262400.1234567`,
		"request", `{"body":"x=1","header":{"authorization":"Bearer secret","x-multi":["a",2,true],"X-MULTI":"b","content-type":"application/x-www-form-urlencoded; charset=utf-8"}}`,
		"response", `{"status_code":200,"body":"<html><body>hi</body></html>","header":{"Set-Cookie":["a=1","b=2"]}}`,
	))
	s := b.Submissions[0]
	if s.Name != "shop" || s.Method != "POST" || s.IPAddress != "2001:db8::1" || s.Path != "/orders?page=2" {
		t.Errorf("scalars not normalised: %+v", s)
	}
	if want := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC); !s.CreatedAt.Equal(want) {
		t.Errorf("created_at = %v, want %v (truncated to microseconds)", s.CreatedAt, want)
	}
	if got := s.Request.Header["Authorization"]; len(got) != 1 || got[0] != Mask {
		t.Errorf("Authorization = %q, want masked", got)
	}
	if got := strings.Join(s.Request.Header["X-Multi"], ","); got != "a,2,true,b" {
		t.Errorf("X-Multi = %q, want values merged in order", got)
	}
	if got := s.Response.Header["Set-Cookie"]; len(got) != 2 || got[0] != Mask || got[1] != Mask {
		t.Errorf("Set-Cookie = %q, want every value masked", got)
	}
	if s.Request.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("request content_type = %q", s.Request.ContentType)
	}
	if s.Response.ContentType != "text/plain" { // no sniffer configured: UTF-8 text
		t.Errorf("response content_type = %q", s.Response.ContentType)
	}
}

func TestParseSubmissionDefaults(t *testing.T) {
	s := mustParse(t, validItem("request", `{}`, "response", `{"status_code":204,"body":null,"header":null}`)).Submissions[0]
	if s.Request.Body != "" || s.Request.Header == nil || len(s.Request.Header) != 0 || s.Request.ContentType != "" {
		t.Errorf("request defaults: %+v", s.Request)
	}
	if s.Response.Header == nil || s.IPAddress != "" {
		t.Errorf("response defaults: %+v", s)
	}
}

func TestContentType(t *testing.T) {
	sniffHTML := func([]byte) string { return "text/html; charset=utf-8" }
	cases := []struct {
		header Header
		body   string
		sniff  Sniffer
		want   string
	}{
		{Header{"Content-Type": {"Application/JSON; charset=utf-8"}}, "", plainSniff, "application/json"},
		{Header{"Content-Type": {"not a type;;"}}, "x", plainSniff, "not a type"},
		{Header{}, `{"a":[1,2]}`, plainSniff, "application/json"},
		{Header{}, `42`, plainSniff, "application/json"},
		{Header{}, "", plainSniff, ""},
		{Header{}, "<html></html>", sniffHTML, "text/html"},
		{Header{}, "plain words", plainSniff, "text/plain"},
		{Header{}, "\xff\xfe\x00", plainSniff, "application/octet-stream"},
	}
	for _, c := range cases {
		if got := contentType(c.header, []byte(c.body), c.sniff); got != c.want {
			t.Errorf("contentType(%v, %q) = %q, want %q", c.header, c.body, got, c.want)
		}
	}
}

func TestCreatedAtUnits(t *testing.T) {
	want := time.Date(2026, 11, 21, 11, 59, 59, 250000000, time.UTC)
	for _, raw := range []string{
		`1795262399.25`, `1795262399250`, `1795262399250000`, `1795262399250.0`,
		`1.79526239925e9`, `"2026-11-21T12:59:59.25+01:00"`, `"2026-11-21T11:59:59.250000Z"`,
		`"2026-11-21T11:59:59.25z"`, `"2026-11-21t12:59:59.2500009+01:00"`, // RFC 3339 §5.6: t and z; created_at truncates
	} {
		b, err := parse(t, validItem("created_at", raw))
		if err != nil {
			t.Errorf("created_at %s: %v", raw, err)
			continue
		}
		if got := b.Submissions[0].CreatedAt; !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("created_at %s = %v, want %v UTC", raw, got, want)
		}
	}
}

func TestCreatedAtBounds(t *testing.T) {
	p := DefaultPolicy()
	limit := testNow.Add(MaxFutureSkew)
	oldest := testNow.Add(p.VisibilityDelay - p.Retention) // expires exactly when it would become visible
	cases := []struct {
		at time.Time
		ok bool
	}{
		{limit, true},
		{limit.Add(time.Microsecond), false},
		{oldest.Add(time.Microsecond), true},
		{oldest, false},
	}
	for _, c := range cases {
		_, err := parse(t, validItem("created_at", fmt.Sprintf(`"%s"`, FormatTime(c.at))))
		if (err == nil) != c.ok {
			t.Errorf("created_at %s: err = %v, want ok=%v", FormatTime(c.at), err, c.ok)
		}
	}
}

func TestParseSubmissionErrors(t *testing.T) {
	long := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	cases := []struct {
		name string
		body string
		want []string // fields at fault; nil: a body-level error without fields
	}{
		{"empty body", ``, nil},
		{"malformed", `{"name":`, nil},
		{"scalar", `42`, nil},
		{"empty array", `[]`, nil},
		{"envelope not array", `{"messages":{}}`, []string{"messages"}},
		{"missing name", validItem("name", "<absent>"), []string{"name"}},
		{"null name", validItem("name", "null"), []string{"name"}},
		{"blank name", validItem("name", `"   "`), []string{"name"}},
		{"long name", validItem("name", long(201)), []string{"name"}},
		{"numeric name", validItem("name", `7`), []string{"name"}},
		{"missing created_at", validItem("created_at", "<absent>"), []string{"created_at"}},
		{"negative created_at", validItem("created_at", `-1`), []string{"created_at"}},
		{"zero created_at", validItem("created_at", `0`), []string{"created_at"}},
		{"bool created_at", validItem("created_at", `true`), []string{"created_at"}},
		{"text created_at", validItem("created_at", `"yesterday"`), []string{"created_at"}},
		{"huge created_at", validItem("created_at", `1e300`), []string{"created_at"}},
		{"method with space", validItem("method", `"GE T"`), []string{"method"}},
		{"long method", validItem("method", long(33)), []string{"method"}},
		{"empty method", validItem("method", `""`), []string{"method"}},
		{"relative path", validItem("path", `"orders"`), []string{"path"}},
		{"long path", validItem("path", `"/`+strings.Repeat("p", 4096)+`"`), []string{"path"}},
		{"bad ip", validItem("ip_address", `"1.2.3.999"`), []string{"ip_address"}},
		{"numeric ip", validItem("ip_address", `12`), []string{"ip_address"}},
		{"request not object", validItem("request", `"x"`), []string{"request"}},
		{"missing response", validItem("response", "<absent>"), []string{"response"}},
		{"missing status", validItem("response", `{}`), []string{"response.status_code"}},
		{"status 99", validItem("response", `{"status_code":99}`), []string{"response.status_code"}},
		{"status 600", validItem("response", `{"status_code":600}`), []string{"response.status_code"}},
		{"status string", validItem("response", `{"status_code":"200"}`), []string{"response.status_code"}},
		{"status fraction", validItem("response", `{"status_code":200.5}`), []string{"response.status_code"}},
		{"body not string", validItem("request", `{"body":{"a":1}}`), []string{"request.body"}},
		{"header not object", validItem("request", `{"header":["a"]}`), []string{"request.header"}},
		{"header null value", validItem("request", `{"header":{"x-a":null}}`), []string{"request.header.X-A"}},
		{"header object value", validItem("response", `{"status_code":200,"header":{"x-a":{}}}`), []string{"response.header.X-A"}},
		{"header array with null", validItem("request", `{"header":{"x-a":["1",null]}}`), []string{"request.header.X-A"}},
		{"header bad name", validItem("request", `{"header":{"bad name":"1"}}`), []string{"request.header"}},
		{"batch item", "[" + validItem() + "," + validItem("method", `"A B"`) + ",7]", []string{"[1].method", "[2]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.body)
			assertFields(t, err, c.want...)
		})
	}
}

func TestBatchLimit(t *testing.T) {
	p := DefaultPolicy()
	p.MaxBatch = 2
	body := "[" + strings.Repeat(validItem()+",", 2) + validItem() + "]"
	if _, err := p.parse([]byte(body), testNow); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("3 items over a limit of 2: err = %v, want ErrTooLarge", err)
	}
}

// A batch spanning more distinct UTC days of created_at than MaxBatchDays is
// refused, naming the created_at of the first item past them; items on days
// already spanned, and a batch within the bound, pass.
func TestBatchDaysLimit(t *testing.T) {
	p := DefaultPolicy()
	p.MaxBatchDays = 2
	p.Retention = 30 * 24 * time.Hour
	day := func(n int, second int) string {
		return validItem("created_at", strconv.FormatInt(testNow.Add(-time.Duration(n)*24*time.Hour).Truncate(24*time.Hour).Unix()+int64(second), 10))
	}
	within := "[" + day(0, 1) + "," + day(1, 1) + "," + day(0, 2) + "," + day(1, 86399) + "]"
	if _, err := p.parse([]byte(within), testNow); err != nil {
		t.Fatalf("4 items on 2 days under a limit of 2: %v", err)
	}
	past := "[" + day(0, 1) + "," + day(1, 1) + "," + day(0, 2) + "," + day(2, 0) + "," + day(3, 0) + "]"
	_, err := p.parse([]byte(past), testNow)
	assertFields(t, err, "[3].created_at")
	p.MaxBatchDays = 0
	if _, err := p.parse([]byte(past), testNow); err != nil {
		t.Fatalf("no days limit: %v", err)
	}
}

// assertFields checks err is a ValidationError naming exactly fields, in order.
func assertFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if verr.Message == "" {
		t.Errorf("validation error without a message")
	}
	got := make([]string, len(verr.Fields))
	for i, f := range verr.Fields {
		got[i] = f.Field
		if f.Message == "" {
			t.Errorf("field %s has no message", f.Field)
		}
	}
	if strings.Join(got, " ") != strings.Join(fields, " ") {
		t.Errorf("fields = %q, want %q (%v)", got, fields, err)
	}
}

// JSON after a UTF-8 byte order mark, which RFC 8259 lets parsers ignore, is
// JSON to the derived content_type too.
func TestContentTypeOfJSONAfterAByteOrderMark(t *testing.T) {
	s := mustParse(t, validItem("request", `{"body":"\ufeff\ufeff{\"a\":1}"}`, "response", `{"status_code":200,"body":"\ufeffa"}`)).Submissions[0]
	if s.Request.ContentType != "application/json" {
		t.Errorf("request content_type = %q, want application/json", s.Request.ContentType)
	}
	if s.Response.ContentType != "text/plain" {
		t.Errorf("response content_type = %q, want text/plain", s.Response.ContentType)
	}
}

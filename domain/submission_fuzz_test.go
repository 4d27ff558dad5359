package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzPolicy is the default policy with a small batch limit, so the fuzzer reaches it.
func fuzzPolicy() Policy {
	p := DefaultPolicy()
	p.MaxBatch = 3
	p.Sniff = http.DetectContentType
	return p
}

// checkParse fails unless ParseSubmissions either refused body with a classified
// error (never a 500) or accepted only messages that keep every domain invariant.
func checkParse(t *testing.T, p Policy, body []byte) {
	t.Helper()
	original := string(body)
	batch, err := p.parse(body, testNow)
	if string(body) != original {
		t.Fatalf("ParseSubmissions changed its input")
	}
	// The drafts point into buffers a decoder reuses: what validation made of
	// them must not change when they are written over.
	if drafts, decodeErr := DecodeBody(bytes.Clone(body), p.MaxBatch); decodeErr == nil {
		kept, keptErr := p.ValidateSubmissions(drafts, testNow)
		scribble(drafts)
		if !reflect.DeepEqual(batch, kept) || fmt.Sprint(err) != fmt.Sprint(keptErr) {
			t.Fatalf("what %q validated to changed with its drafts:\n%+v, %v\nwant\n%+v, %v", body, kept, keptErr, batch, err)
		}
	}
	if err != nil {
		var invalid *ValidationError
		if !errors.As(err, &invalid) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v (%T) is neither a ValidationError nor ErrTooLarge", err, err)
		}
		if batch.Submissions != nil {
			t.Fatalf("error %v came with submissions %+v", err, batch.Submissions)
		}
		return
	}
	if n := len(batch.Submissions); n < 1 || n > p.MaxBatch || (n > 1 && !batch.Multiple) {
		t.Fatalf("accepted %d submissions (multiple=%v) with a limit of %d", n, batch.Multiple, p.MaxBatch)
	}
	for i, s := range batch.Submissions {
		if err := submissionInvariant(p, testNow, s); err != nil {
			t.Fatalf("submission %d of %q: %v\n%+v", i, body, err, s)
		}
	}
}

// submissionInvariant reports the first domain rule an accepted submission breaks.
func submissionInvariant(p Policy, now time.Time, s Submission) error {
	now = Micro(now)
	switch n := utf8.RuneCountInString(s.Name); {
	case s.Name != strings.TrimSpace(s.Name) || n < 1 || n > MaxNameLength:
		return errors.New("name is not trimmed or not 1 to 200 characters")
	case !IsToken(s.Method) || s.Method != strings.ToUpper(s.Method) || len(s.Method) > maxMethodLen:
		return errors.New("method is not an upper-case token of at most 32 characters")
	case !strings.HasPrefix(s.Path, "/") || utf8.RuneCountInString(s.Path) > MaxPathLength:
		return errors.New("path does not start with / or is too long")
	case s.StatusCode < 100 || s.StatusCode > 599:
		return errors.New("status code out of range")
	case s.CreatedAt.Location() != time.UTC || !s.CreatedAt.Equal(s.CreatedAt.Truncate(time.Microsecond)):
		return errors.New("created_at is not UTC at microsecond precision")
	case s.CreatedAt.After(now.Add(MaxFutureSkew)) || !now.Add(p.VisibilityDelay).Before(s.CreatedAt.Add(p.Retention)):
		return errors.New("created_at is outside the accepted window")
	}
	if s.IPAddress != "" {
		if problem := ipProblem(s.IPAddress); problem != "" {
			return errors.New(problem)
		}
	}
	for _, c := range []Content{s.Request, s.Response} {
		if err := contentInvariant(p, c); err != nil {
			return err
		}
	}
	return nil
}

func contentInvariant(p Policy, c Content) error {
	if c.Header == nil {
		return errors.New("nil header")
	}
	masked := p.maskSet()
	for name, values := range c.Header {
		if !IsToken(name) || CanonicalHeaderName(name) != name {
			return errors.New("header name " + strconv.Quote(name) + " is not canonical")
		}
		for _, v := range values {
			if masked[name] && v != Mask {
				return errors.New("masked header " + name + " kept a value")
			}
		}
	}
	ct := c.ContentType
	if strings.Contains(ct, ";") || ct != strings.ToLower(ct) || ct != strings.TrimSpace(ct) {
		return errors.New("content_type " + strconv.Quote(ct) + " has parameters or is not trimmed and lower-case")
	}
	if ct != formMediaType && json.Valid([]byte(c.Body)) {
		if leak := redactedValue(jsonTreeOf(c.Body), p.redactSet()); leak != "" {
			return errors.New("redacted field " + leak + " kept its value")
		}
	}
	if ct == formMediaType && redactForm(c.Body, p.redactSet()) != c.Body {
		return errors.New("a redacted form field kept its value")
	}
	return nil
}

func jsonTreeOf(s string) any {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	_ = dec.Decode(&v)
	return v
}

// redactedValue returns the name of a redacted field whose value is not the mask.
func redactedValue(v any, fields fieldSet) string {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if fields.names[redactionKey(k)] && item != Mask {
				return k
			}
			if leak := redactedValue(item, fields); leak != "" {
				return leak
			}
		}
	case []any:
		for _, item := range v {
			if leak := redactedValue(item, fields); leak != "" {
				return leak
			}
		}
	}
	return ""
}

// Seeds for the body fuzzer: each shape, secrets in headers and bodies, and edges.
var submissionSeeds = []string{
	validItem(),
	"[" + validItem() + "," + validItem("name", `"  other  "`, "method", `"delete"`) + "]",
	`{"messages":[{"app":"sdk","created_at":1795262400000,"method":"GET","path":"/","status_code":404,"request":{},"response":{"body":"nope"}}]}`,
	validItem("request", `{"header":{"authorization":"Bearer k","cookie":["a=1","b=2"],"content-type":"application/json; charset=utf-8"},"body":"{\"password\":\"p\",\"n\":[{\"Api-Key\":1}]}"}`),
	validItem("request", `{"header":{"Content-Type":"application/x-www-form-urlencoded"},"body":"user=u&pass%77ord=p&token"}`),
	validItem("response", `{"status_code":200.0,"header":{"Set-Cookie":"s","X-Api-Key":42,"Content-Type":"application/problem+json"},"body":"{\"secret\":{\"a\":true}}"}`),
	validItem("created_at", `"2026-11-21T11:59:59.9999999+02:00"`, "ip_address", `"::FFFF:192.0.2.1"`),
	validItem("created_at", `1.7952624e9`, "ip_address", `""`, "path", `"/a?b=c&password=d"`),
	validItem("created_at", `"2026-11-21T11:59:59.9999999z"`, "ip_address", `"FE80::1%Eth-0.~_"`),
	validItem("ip_address", `"::1%\n\u0000"`),
	validItem("response", `{"status_code":99}`, "method", `"GE T"`),
	"[" + validItem() + "," + validItem() + "," + validItem() + "," + validItem() + "]",
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"messages":{}}`,
	`[]`,
	`[1,"a",null]`,
	"\xef\xbb\xbf{}",
	``,
}

func FuzzParseSubmissions(f *testing.F) {
	for _, seed := range submissionSeeds {
		f.Add([]byte(seed))
	}
	p := fuzzPolicy()
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParse(t, p, body)
	})
}

// FuzzSubmissionFields puts arbitrary field values into a well-formed submission, so
// the fuzzer spends its time on validation and normalisation rather than on syntax.
// createdAt and header are raw JSON when they parse as such, else JSON strings.
func FuzzSubmissionFields(f *testing.F) {
	f.Add("shop", "1795262400", "203.0.113.9", "post", "/orders", 201, `{"Content-Type":"application/json"}`, `{"password":"p"}`, "ok")
	f.Add(" \u00a0name\t", `"2026-11-21T12:00:00Z"`, "2001:DB8::1", "PATCH", "/", 599, `{"cookie":["a"],"content-type":"application/x-www-form-urlencoded"}`, "a=1&secret=2", "")
	f.Add("", "1e14", "1.2.3", "GET\x00", "x", 100, `{"Content-Type":"text/plain; charset=\"utf-8\""}`, "\xff\xfe", `{"token":null}`)
	f.Add("n", "17952624000000000", "::", "~", "//", 600, `{"x":{"a":1}}`, "[]", "<html>")
	f.Add("n", `"2026-11-21t11:59:59.25z"`, "fe80::1%eth0", "GET", "/", 200, `{}`, "", "")
	f.Add("n", "1795262400", "::ffff:10.0.0.1%<img src=x>", "GET", "/", 200, `{}`, "", "")
	p := fuzzPolicy()
	f.Fuzz(func(t *testing.T, name, createdAt, ip, method, path string, status int, header, reqBody, respBody string) {
		raw := func(s string) json.RawMessage {
			if json.Valid([]byte(s)) {
				return json.RawMessage(s)
			}
			quoted, _ := json.Marshal(s)
			return quoted
		}
		item := map[string]any{
			"name": name, "created_at": raw(createdAt), "ip_address": ip, "method": method, "path": path,
			"request":  map[string]any{"header": raw(header), "body": reqBody},
			"response": map[string]any{"status_code": status, "header": raw(header), "body": respBody},
		}
		body, err := json.Marshal(item)
		if err != nil {
			t.Skip("not encodable")
		}
		checkParse(t, p, body)
	})
}

// scribble writes over every byte of text the drafts point to.
func scribble(drafts Drafts) {
	overwrite := func(values ...Value) {
		for _, v := range values {
			for i := range v.Text {
				v.Text[i] = 'x'
			}
		}
	}
	for _, d := range drafts.Items {
		overwrite(d.Name, d.App, d.CreatedAt, d.IPAddress, d.Method, d.Path, d.DurationMS, d.StatusCode)
		for _, c := range []DraftContent{d.Request, d.Response} {
			overwrite(c.Body, c.StatusCode)
			for _, f := range c.Header.Fields {
				overwrite(f.Values...)
				overwrite(Value{Text: f.Name})
			}
		}
	}
}

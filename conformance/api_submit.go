package conformance

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func apiTestSubmitSingleObject(t *testing.T, s apiSuite) {
	e := s.start(t)
	stored := e.ingestOne(t, apiAcmeLive, apiItem(e.clock.Now().Add(-time.Minute), nil))
	listed := apiByID(e.reveal(t, apiAcmeLive, stored.ID))[stored.ID]

	byID := e.fetch(t, apiAcmeLive, stored.ID)
	byReference := e.fetch(t, apiAcmeLive, stored.Reference)
	if byID["id"] != stored.ID || byID["reference"] != stored.Reference {
		t.Errorf("lookup by id gave id %v, reference %v; want %s, %s", byID["id"], byID["reference"], stored.ID, stored.Reference)
	}
	if !reflect.DeepEqual(byID, byReference) || !reflect.DeepEqual(byID, listed) {
		t.Errorf("the same message differs by lookup:\nby id        %s\nby reference %s\nlisted       %s",
			apiShow(byID), apiShow(byReference), apiShow(listed))
	}
}

func apiTestSubmitArray(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	names := []string{"first", "second", "third"}
	var batch []any
	for _, name := range names {
		batch = append(batch, apiItem(at, map[string]any{"name": name}))
	}
	stored := e.ingestBatch(t, apiAcmeLive, batch, len(batch))
	// A one-item array is still a batch: data is an array.
	single := e.ingestBatch(t, apiAcmeLive, []any{apiItem(at, map[string]any{"name": "alone"})}, 1)
	e.reveal(t, apiAcmeLive, apiIDs(append(stored, single...))...)

	for i, identity := range stored {
		for _, lookup := range []string{identity.ID, identity.Reference} {
			if got := e.fetch(t, apiAcmeLive, lookup)["name"]; got != names[i] {
				t.Errorf("data[%d] (%s) is the message named %v, want %q: identities are not in input order", i, lookup, got, names[i])
			}
		}
	}
}

func apiTestSubmitEnvelope(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	envelope := map[string]any{"messages": []any{
		// The client SDKs' form: app for name, status_code at the top.
		apiItem(at, map[string]any{"name": apiAbsent, "app": "portal", "status_code": 201, "response.status_code": apiAbsent}),
		apiItem(at, map[string]any{"name": "shop", "response.status_code": 404}),
	}}
	stored := e.ingestBatch(t, apiAcmeLive, envelope, 2)
	e.reveal(t, apiAcmeLive, apiIDs(stored)...)

	want := []struct {
		name   string
		status int
	}{{"portal", 201}, {"shop", 404}}
	for i, identity := range stored {
		m := e.fetch(t, apiAcmeLive, identity.ID)
		if m["name"] != want[i].name || apiInt(t, m, "status_code") != want[i].status {
			t.Errorf("envelope item %d stored as %s, want name %q and status_code %d", i, apiShow(m), want[i].name, want[i].status)
		}
	}
}

func apiTestSubmitContentTypeHeader(t *testing.T, s apiSuite) {
	e := s.start(t)
	var ids []string
	// Media types are case-insensitive and may carry parameters.
	for _, contentType := range []string{"application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"} {
		body := apiBody(t, apiItem(e.clock.Now().Add(-time.Minute), nil))
		r := e.do(t, http.MethodPost, "/v1/messages", body, append(apiBearer(apiAcmeLive), "Content-Type", contentType)...)
		r.wantOK(t, apiIngestedText, "data")
		ids = append(ids, apiCheckIdentity(t, r, "data", true).ID)
	}
	e.reveal(t, apiAcmeLive, ids...)
}

func apiTestMessageWireFormat(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-90 * time.Second)
	submittedAt := e.clock.Now()
	live := e.ingestOne(t, apiAcmeLive, apiItem(at, map[string]any{
		"name": "billing", "method": "PUT", "path": "/v1/invoices/7", "response.status_code": 202,
	}))
	test := e.ingestOne(t, apiAcmeTest, apiItem(at, map[string]any{"name": "sandbox"}))
	e.reveal(t, apiAcmeLive, live.ID)
	e.awaitListed(t, apiAcmeTest, test.ID)

	for _, c := range []struct {
		key      APIKey
		identity apiIdentity
		want     map[string]any
	}{
		{apiAcmeLive, live, map[string]any{"name": "billing", "method": "PUT", "path": "/v1/invoices/7", "domain": "live"}},
		{apiAcmeTest, test, map[string]any{"name": "sandbox", "method": "GET", "path": "/v1/orders", "domain": "test"}},
	} {
		m := e.fetch(t, c.key, c.identity.ID)
		c.want["id"], c.want["reference"] = c.identity.ID, c.identity.Reference
		c.want["ip_address"] = "203.0.113.7"
		c.want["created_at"], c.want["updated_at"] = apiWire(at), apiWire(submittedAt)
		for key, want := range c.want {
			if m[key] != want {
				t.Errorf("%s: %s is %s, want %q", c.identity.ID, key, apiShow(m[key]), want)
			}
		}
		if got := apiHeader(t, m, "request"); !reflect.DeepEqual(got, map[string][]string{"Accept": {"application/json"}}) {
			t.Errorf("%s: request.header is %v", c.identity.ID, got)
		}
		if m["response"].(map[string]any)["body"] != `{"ok":true}` {
			t.Errorf("%s: response.body is %s, want the JSON text as a string", c.identity.ID, apiShow(m["response"]))
		}
	}
	if code := apiInt(t, e.fetch(t, apiAcmeLive, live.ID), "status_code"); code != 202 {
		t.Errorf("status_code is %d, want 202", code)
	}
}

func apiTestCreatedAtFormats(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := apiStart.Truncate(time.Second).Add(-10*time.Minute + 654321*time.Microsecond)
	offset := time.FixedZone("+05:30", 5*3600+30*60)
	pacific := time.FixedZone("-08:00", -8*3600)
	cases := []struct {
		name  string
		value any
		want  time.Time
	}{
		{"integer seconds", apiRaw(strconv.FormatInt(at.Unix(), 10)), at.Truncate(time.Second)},
		{"decimal seconds", apiRaw(fmt.Sprintf("%d.%06d", at.Unix(), at.Nanosecond()/1000)), at},
		{"decimal seconds, three digits", apiRaw(fmt.Sprintf("%d.%03d", at.Unix(), at.Nanosecond()/1e6)), at.Truncate(time.Millisecond)},
		{"integer milliseconds", apiRaw(strconv.FormatInt(at.UnixMilli(), 10)), at.Truncate(time.Millisecond)},
		{"decimal milliseconds", apiRaw(fmt.Sprintf("%d.%03d", at.UnixMilli(), at.Nanosecond()/1000%1000)), at},
		{"integer microseconds", apiRaw(strconv.FormatInt(at.UnixMicro(), 10)), at},
		{"RFC 3339 UTC", at.Format(time.RFC3339Nano), at},
		{"RFC 3339 with +05:30 offset", at.In(offset).Format(time.RFC3339Nano), at},
		{"RFC 3339 with -08:00 offset, no fraction", at.In(pacific).Format(time.RFC3339), at.Truncate(time.Second)},
	}
	var batch []any
	for _, c := range cases {
		batch = append(batch, apiItem(at, map[string]any{"created_at": c.value}))
	}
	submittedAt := e.clock.Now()
	stored := e.ingestBatch(t, apiAcmeLive, batch, len(batch))
	listed := apiByID(e.reveal(t, apiAcmeLive, apiIDs(stored)...))
	for i, c := range cases {
		m := listed[stored[i].ID]
		if got, want := m["created_at"], apiWire(c.want); got != want {
			t.Errorf("%s (%s): created_at %v, want %s", c.name, apiShow(c.value), got, want)
		}
		if got, want := m["updated_at"], apiWire(submittedAt); got != want {
			t.Errorf("%s: updated_at %v, want the clock at submission %s", c.name, got, want)
		}
	}
}

func apiTestNormalisation(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	// Written by hand: the order of colliding header names matters, and a Go map would sort them.
	full := apiRaw(fmt.Sprintf(`{
		"name": "shop", "created_at": %q, "method": "post", "path": "/v1/orders?expand=items&limit=5",
		"ip_address": "2001:DB8::1",
		"request": {"header": {"x-custom": "a", "X-CUSTOM": ["b", "c"], "x-Custom": 1, "x-num": 42,
			"x-bool": true, "x-float": 1.5, "accept": ["application/json", "text/plain"]}, "body": "{}"},
		"response": {"status_code": 201, "header": {"x-request-id": "r1", "X-Request-ID": "r2"}},
		"domain": "test", "account": "globex", "id": "not-mine", "reference": "msg_AAAAAAAAAAAA",
		"updated_at": "2000-01-01T00:00:00Z", "visible_at": 1, "extra": {"nested": [1, null]}
	}`, apiRFC3339(at)))
	submittedAt := e.clock.Now()
	stored := e.ingestOne(t, apiAcmeLive, full)
	defaults := e.ingestOne(t, apiAcmeLive, apiItem(at, map[string]any{
		"ip_address": apiAbsent, "request": map[string]any{}, "response": map[string]any{"status_code": 204},
	}))
	listed := apiByID(e.reveal(t, apiAcmeLive, stored.ID, defaults.ID))

	m := listed[stored.ID]
	for key, want := range map[string]string{
		"method": "POST", "ip_address": "2001:db8::1", "path": "/v1/orders?expand=items&limit=5",
		"domain": "live", "id": stored.ID, "reference": stored.Reference, "updated_at": apiWire(submittedAt),
	} {
		if m[key] != want {
			t.Errorf("%s is %s, want %q (unknown fields are ignored, the rest normalised)", key, apiShow(m[key]), want)
		}
	}
	wantRequest := map[string][]string{
		"X-Custom": {"a", "b", "c", "1"}, "X-Num": {"42"}, "X-Bool": {"true"}, "X-Float": {"1.5"},
		"Accept": {"application/json", "text/plain"},
	}
	if got := apiHeader(t, m, "request"); !reflect.DeepEqual(got, wantRequest) {
		t.Errorf("request.header is %v, want %v", got, wantRequest)
	}
	if got, want := apiHeader(t, m, "response"), map[string][]string{"X-Request-Id": {"r1", "r2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("response.header is %v, want %v", got, want)
	}

	d := listed[defaults.ID]
	if d["ip_address"] != "" {
		t.Errorf("ip_address of a submission without one is %s, want \"\"", apiShow(d["ip_address"]))
	}
	for _, side := range []string{"request", "response"} {
		content := d[side].(map[string]any)
		if content["body"] != "" || content["content_type"] != "" || len(apiHeader(t, d, side)) != 0 {
			t.Errorf("%s without header and body is %s, want header {}, body \"\", content_type \"\"", side, apiShow(content))
		}
	}

	apiCheckIPForms(t, e)
}

// apiCheckIPForms checks that addresses are stored in canonical form.
func apiCheckIPForms(t *testing.T, e *apiEnv) {
	t.Helper()
	cases := []struct{ sent, want string }{
		{"2001:DB8::1", "2001:db8::1"},
		{"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
		{"203.0.113.7", "203.0.113.7"},
		{"", ""},
	}
	var batch []any
	for _, c := range cases {
		batch = append(batch, apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"ip_address": c.sent}))
	}
	stored := e.ingestBatch(t, apiAcmeLive, batch, len(batch))
	listed := apiByID(e.reveal(t, apiAcmeLive, apiIDs(stored)...))
	for i, c := range cases {
		if got := listed[stored[i].ID]["ip_address"]; got != c.want {
			t.Errorf("ip_address %q stored as %s, want %q", c.sent, apiShow(got), c.want)
		}
	}
}

func apiTestHeaderMasking(t *testing.T, s apiSuite) {
	e := s.start(t)
	const secret = "SECRET"
	item := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{
		"request.header": apiRaw(`{"authorization": "Bearer SECRET-a1",
			"Proxy-Authorization": ["Basic SECRET-p1", "Basic SECRET-p2"],
			"COOKIE": "sid=SECRET-c1", "cookie": ["theme=SECRET-c2"], "x-api-key": "SECRET-k1", "X-Other": "visible"}`),
		"response.header": apiRaw(`{"set-cookie": ["sid=SECRET-s1; HttpOnly", "b=SECRET-s2"],
			"X-API-KEY": 12345678, "Authorization": "SECRET-ra", "Content-Type": "text/plain"}`),
	})
	r := e.post(t, apiAcmeLive, item)
	r.wantOK(t, apiIngestedText, "data")
	stored := apiCheckIdentity(t, r, "data", true)
	e.reveal(t, apiAcmeLive, stored.ID)

	const mask = "***************"
	want := map[string]map[string][]string{
		"request": {
			"Authorization": {mask}, "Proxy-Authorization": {mask, mask}, "Cookie": {mask, mask},
			"X-Api-Key": {mask}, "X-Other": {"visible"},
		},
		"response": {
			"Set-Cookie": {mask, mask}, "X-Api-Key": {mask}, "Authorization": {mask}, "Content-Type": {"text/plain"},
		},
	}
	m := e.fetch(t, apiAcmeLive, stored.ID)
	for side, header := range want {
		if got := apiHeader(t, m, side); !reflect.DeepEqual(got, header) {
			t.Errorf("%s.header is %v, want %v", side, got, header)
		}
	}
	for _, reply := range []apiReply{r, e.get(t, apiAcmeLive, "/v1/messages"), e.get(t, apiAcmeLive, "/v1/messages/"+stored.ID)} {
		if strings.Contains(string(reply.raw), secret) {
			t.Errorf("a masked secret is in the reply: %s", reply)
		}
	}
}

func apiTestContentTypeAndBodies(t *testing.T, s apiSuite) {
	e := s.start(t)
	cases := []struct {
		name   string
		header any // the header object of both sides, or apiAbsent
		body   any // the body of both sides, or apiAbsent
		want   string
	}{
		{"header with parameters", map[string]any{"Content-Type": "application/json; charset=utf-8"}, `{"a":1}`, "application/json"},
		{"header in mixed case", map[string]any{"content-type": "Text/HTML; Charset=UTF-8"}, "<p>hi</p>", "text/html"},
		{"header wins over the body", map[string]any{"Content-Type": "application/xml"}, `{"a":1}`, "application/xml"},
		{"header with an empty body", map[string]any{"Content-Type": "application/json"}, "", "application/json"},
		{"no header, JSON object body", apiAbsent, `{"items": [1, 2],  "ok": true}`, "application/json"},
		{"no header, JSON array body", map[string]any{}, `[1,2]`, "application/json"},
		{"no header, empty body", apiAbsent, "", ""},
		{"no header, no body", apiAbsent, apiAbsent, ""},
		{"no header, HTML body", apiAbsent, "<!DOCTYPE html><html><body><p>hi</p></body></html>", "text/html"},
		{"no header, text body", apiAbsent, "hello, plain words", "text/plain"},
		{"no header, text with escapes", apiAbsent, "line1\nline2\t\"quoted\" <b> & ünïcødé ✓ \\ /", "text/plain"},
	}
	var batch []any
	for _, c := range cases {
		batch = append(batch, apiItem(e.clock.Now().Add(-time.Minute), map[string]any{
			"request.header": c.header, "request.body": c.body, "response.header": c.header, "response.body": c.body,
		}))
	}
	stored := e.ingestBatch(t, apiAcmeLive, batch, len(batch))
	listed := apiByID(e.reveal(t, apiAcmeLive, apiIDs(stored)...))
	for i, c := range cases {
		wantBody, _ := c.body.(string)
		for _, side := range []string{"request", "response"} {
			content := listed[stored[i].ID][side].(map[string]any)
			if content["content_type"] != c.want {
				t.Errorf("%s: %s.content_type is %s, want %q", c.name, side, apiShow(content["content_type"]), c.want)
			}
			if content["body"] != wantBody {
				t.Errorf("%s: %s.body is %s, want %q verbatim", c.name, side, apiShow(content["body"]), wantBody)
			}
		}
	}
}

func apiTestBoundaryValuesAccepted(t *testing.T, s apiSuite) {
	e := s.start(t)
	now := e.clock.Now()
	at := now.Add(-time.Minute)
	longPath := "/" + strings.Repeat("p", 4095)
	cases := []struct {
		name string
		edit map[string]any
		key  string // a field to compare with the sent value
	}{
		{"name of 200 characters", map[string]any{"name": strings.Repeat("é", 200)}, "name"},
		{"method of 32 characters", map[string]any{"method": strings.Repeat("M", 32)}, "method"},
		{"path of 4096 characters", map[string]any{"path": longPath}, "path"},
		{"status_code 100", map[string]any{"response.status_code": 100}, ""},
		{"status_code 599", map[string]any{"response.status_code": 599}, ""},
		{"status_code 200.0", map[string]any{"response.status_code": apiRaw("200.0")}, ""},
		{"created_at 24h ahead", map[string]any{"created_at": apiRFC3339(now.Add(24 * time.Hour))}, ""},
		{"created_at just inside retention", map[string]any{"created_at": apiRFC3339(now.Add(-e.cfg.Policy.Retention + time.Hour))}, ""},
		{"empty ip_address", map[string]any{"ip_address": ""}, "ip_address"},
		{"null ip_address", map[string]any{"ip_address": nil}, ""},
		{"empty header array", map[string]any{"request.header": map[string]any{"X-Empty": []any{}}}, ""},
	}
	var batch []any
	for _, c := range cases {
		batch = append(batch, apiItem(at, c.edit))
	}
	stored := e.ingestBatch(t, apiAcmeLive, batch, len(batch))
	listed := apiByID(e.reveal(t, apiAcmeLive, apiIDs(stored)...))
	for i, c := range cases {
		if c.key != "" && listed[stored[i].ID][c.key] != c.edit[c.key] {
			t.Errorf("%s: %s came back as %s", c.name, c.key, apiShow(listed[stored[i].ID][c.key]))
		}
	}
}

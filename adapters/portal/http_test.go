package portal_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/domain"
)

// A session token reads its own application's messages of its own account and
// domain, and nothing else: not another application's, another domain's or
// another account's, by listing, by filter or by id.
func TestSessionReadsOnlyItsApplication(t *testing.T) {
	s := startService(t, nil)
	shop := []string{
		s.submit(t, acmeLive, "shop", "/orders/1", 200),
		s.submit(t, acmeLive, "shop", "/orders/2", 404),
		s.submit(t, acmeLive, "shop", "/orders/3", 500),
	}
	blog := s.submit(t, acmeLive, "blog", "/posts/1", 200)
	testShop := s.submit(t, acmeTest, "shop", "/orders/1", 200)
	globexShop := s.submit(t, globexLive, "shop", "/orders/1", 200)

	token := s.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)

	listed := s.listedIDs(t, token, "")
	slices.Sort(listed)
	want := slices.Clone(shop)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the session lists %v, want exactly the shop messages %v", listed, want)
	}
	if ids := s.listedIDs(t, token, "name=blog"); len(ids) != 0 {
		t.Errorf("name=blog with a shop session lists %v, want nothing", ids)
	}
	if ids := s.listedIDs(t, token, "status_code=5xx"); !slices.Equal(ids, shop[2:]) {
		t.Errorf("status_code=5xx lists %v, want %v", ids, shop[2:])
	}
	for name, id := range map[string]string{"another application": blog, "another domain": testShop, "another account": globexShop} {
		if r := s.call(t, http.MethodGet, "/v1/messages/"+id, token, ""); r.status != http.StatusNotFound {
			t.Errorf("%s's message: status %d, want 404: %s", name, r.status, r.raw)
		}
	}
	got := s.call(t, http.MethodGet, "/v1/messages/"+shop[0], token, "").want(t, http.StatusOK)
	if m := got.body["data"].(map[string]any); m["name"] != "shop" || m["domain"] != domain.DomainLive {
		t.Errorf("own message: %v", m)
	}

	// The same application in the test domain needs a test key's session.
	testToken := s.session(t, acmeTest, `{"name":"shop"}`)["token"].(string)
	if ids := s.listedIDs(t, testToken, ""); !slices.Equal(ids, []string{testShop}) {
		t.Errorf("the test-domain session lists %v, want [%s]", ids, testShop)
	}
}

// A session created without a name reads every application of its account and
// domain (the owner's support team), and still nothing of another domain or
// account; it stays read-only.
func TestWholeAccountSession(t *testing.T) {
	s := startService(t, nil)
	shop := s.submit(t, acmeLive, "shop", "/orders/1", 200)
	blog := s.submit(t, acmeLive, "blog", "/posts/1", 500)
	testShop := s.submit(t, acmeTest, "shop", "/orders/1", 200)
	globexShop := s.submit(t, globexLive, "shop", "/orders/1", 200)

	// "" is a POST without a body or Content-Type, as curl -X POST sends it.
	for _, body := range []string{`{}`, `{"expires_in":600}`, `{"name":null}`, ""} {
		token := s.session(t, acmeLive, body)["token"].(string)
		listed := s.listedIDs(t, token, "")
		slices.Sort(listed)
		want := []string{shop, blog}
		slices.Sort(want)
		if !slices.Equal(listed, want) {
			t.Errorf("%s: the session lists %v, want every acme live message %v", body, listed, want)
		}
		if ids := s.listedIDs(t, token, "name=blog"); !slices.Equal(ids, []string{blog}) {
			t.Errorf("%s: name=blog lists %v, want [%s]", body, ids, blog)
		}
		for _, id := range []string{shop, blog} {
			s.call(t, http.MethodGet, "/v1/messages/"+id, token, "").want(t, http.StatusOK)
		}
		for name, id := range map[string]string{"another domain": testShop, "another account": globexShop} {
			if r := s.call(t, http.MethodGet, "/v1/messages/"+id, token, ""); r.status != http.StatusNotFound {
				t.Errorf("%s: %s's message: status %d, want 404", body, name, r.status)
			}
		}
		for _, tc := range []struct{ path, body string }{
			{"/v1/messages", `{"name":"shop"}`},
			{"/v1/portal/sessions", `{}`},
			{"/v1/portal/sessions", `{"name":"shop"}`},
		} {
			if r := s.call(t, http.MethodPost, tc.path, token, tc.body); r.status != http.StatusForbidden {
				t.Errorf("%s: POST %s with the session: %d %s, want 403", body, tc.path, r.status, r.raw)
			}
		}
	}
}

// Statistics and exports keep to a session's scope like the list does: one
// application's for a named session, every application of the account and domain
// for a session without a name, nothing of another domain or account.
func TestSessionsScopeStatsAndExport(t *testing.T) {
	s := startService(t, nil)
	shop := []string{
		s.submit(t, acmeLive, "shop", "/orders/1", 200),
		s.submit(t, acmeLive, "shop", "/orders/2", 500),
	}
	blog := s.submit(t, acmeLive, "blog", "/posts/1", 404)
	s.submit(t, acmeTest, "shop", "/orders/1", 200)
	s.submit(t, globexLive, "blog", "/orders/1", 200)

	for _, tc := range []struct {
		body  string
		ids   []string
		names []string
	}{
		{`{"name":"shop"}`, shop, []string{"shop"}},
		{`{}`, append([]string{blog}, shop...), []string{"blog", "shop"}},
	} {
		token := s.session(t, acmeLive, tc.body)["token"].(string)
		stats := s.call(t, http.MethodGet, "/v1/stats", token, "").want(t, http.StatusOK).body["data"].(map[string]any)
		total := stats["total"].(map[string]any)
		if total["count"] != float64(len(tc.ids)) {
			t.Errorf("%s: stats count %v, want %d", tc.body, total["count"], len(tc.ids))
		}
		var names []string
		for _, n := range stats["top_names"].([]any) {
			names = append(names, n.(map[string]any)["name"].(string))
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.names) {
			t.Errorf("%s: top_names %v, want %v", tc.body, names, tc.names)
		}

		export := s.call(t, http.MethodGet, "/v1/messages/export?format=ndjson", token, "").want(t, http.StatusOK)
		var exported []string
		for _, line := range strings.Split(strings.TrimSpace(string(export.raw)), "\n") {
			var m struct{ ID string }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: export line %q: %v", tc.body, line, err)
			}
			exported = append(exported, m.ID)
		}
		slices.Sort(exported)
		want := slices.Clone(tc.ids)
		slices.Sort(want)
		if !slices.Equal(exported, want) {
			t.Errorf("%s: export %v, want %v", tc.body, exported, want)
		}
	}
}

// A session may read, nothing more: no submission, no new session.
func TestSessionIsReadOnly(t *testing.T) {
	s := startService(t, nil)
	token := s.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/messages", `{"name":"shop"}`}, // refused before validation
		{http.MethodPost, "/v1/portal/sessions", `{"name":"shop"}`},
		{http.MethodPost, "/v1/dashboard_access", `{"name":"shop"}`},
		{http.MethodPost, "/v1/portal/sessions", `not even JSON`}, // refused before the body is read
	} {
		r := s.call(t, tc.method, tc.path, token, tc.body)
		if r.status != http.StatusForbidden || r.body["status"] != false {
			t.Errorf("%s %s with a session token: %d %s, want 403", tc.method, tc.path, r.status, r.raw)
		}
	}
}

func TestSessionReply(t *testing.T) {
	s := startService(t, nil)
	before := s.clock.Now()
	r := s.call(t, http.MethodPost, "/v1/portal/sessions", acmeLive, `{"name":"  shop  ","expires_in":120}`).want(t, http.StatusOK)
	if r.body["status"] != true || r.body["message"] == "" {
		t.Errorf("reply %s", r.raw)
	}
	data := r.body["data"].(map[string]any)
	token := data["token"].(string)
	if !strings.HasPrefix(token, portal.TokenPrefix) {
		t.Errorf("token %q lacks the prefix %q", token, portal.TokenPrefix)
	}
	if link := data["url"].(string); link != s.URL+"/portal#token="+token {
		t.Errorf("url %q, want %q", link, s.URL+"/portal#token="+token)
	}
	expires, err := time.Parse(domain.TimeLayout, data["expires_at"].(string))
	if err != nil {
		t.Fatalf("expires_at %q is not the contract's time format: %v", data["expires_at"], err)
	}
	if want := before.Add(120 * time.Second).Truncate(time.Second); !expires.Equal(want) {
		t.Errorf("expires_at %s, want %s", expires, want)
	}

	// The default lifetime is one hour.
	data = s.session(t, acmeLive, `{"name":"shop"}`)
	expires, _ = time.Parse(domain.TimeLayout, data["expires_at"].(string))
	if want := before.Add(time.Hour).Truncate(time.Second); !expires.Equal(want) {
		t.Errorf("default expires_at %s, want %s", expires, want)
	}
}

// The token is refused from the second it expires, with 401.
func TestSessionExpires(t *testing.T) {
	s := startService(t, nil)
	id := s.submit(t, acmeLive, "shop", "/a", 200)
	data := s.session(t, acmeLive, `{"name":"shop","expires_in":60}`)
	token := data["token"].(string)
	expires, _ := time.Parse(domain.TimeLayout, data["expires_at"].(string))

	s.clock.Set(expires.Add(-time.Second))
	s.call(t, http.MethodGet, "/v1/messages/"+id, token, "").want(t, http.StatusOK)
	s.clock.Set(expires)
	for _, path := range []string{"/v1/messages", "/v1/messages/" + id, "/v1/stats", "/v1/messages/export"} {
		r := s.call(t, http.MethodGet, path, token, "").want(t, http.StatusUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", path)
		}
		if r.body["message"] != expiredSession {
			t.Errorf("%s: 401 says %q, want %q", path, r.body["message"], expiredSession)
		}
		checkTellsNothingElse(t, r, token)
	}
	// The API keys themselves keep working.
	s.call(t, http.MethodGet, "/v1/messages", acmeLive, "").want(t, http.StatusOK)
}

func TestForgedTokensAreRefused(t *testing.T) {
	s := startService(t, nil)
	token := s.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)
	other := startService(t, func(c *portal.Config) { c.Secret = []byte(strings.Repeat("x", portal.MinSecretBytes)) })
	foreign := other.session(t, acmeLive, `{"name":"blog"}`)["token"].(string)

	parts := strings.Split(token, ".")
	for name, credential := range map[string]string{
		"signed with another secret": foreign,
		"another app's payload":      parts[0] + "." + strings.Split(foreign, ".")[1] + "." + parts[2],
		"signature cut":              parts[0] + "." + parts[1] + ".",
		"prefix only":                portal.TokenPrefix,
		"garbage":                    portal.TokenPrefix + "not.a.token",
	} {
		r := s.call(t, http.MethodGet, "/v1/messages", credential, "")
		if r.status != http.StatusUnauthorized || r.body["message"] != invalidSession {
			t.Errorf("%s: %d %q, want 401 %q", name, r.status, r.body["message"], invalidSession)
		}
		checkTellsNothingElse(t, r, credential)
	}
	// Past its expiry a forged token is still invalid, never "expired": that
	// would tell that its signature passed.
	s.clock.Advance(portal.MaxSessionTTL + time.Hour)
	if r := s.call(t, http.MethodGet, "/v1/messages", foreign, ""); r.status != http.StatusUnauthorized || r.body["message"] != invalidSession {
		t.Errorf("an expired token of another secret: %d %q, want 401 %q", r.status, r.body["message"], invalidSession)
	}
}

// What a 401 of a portal token says.
const (
	expiredSession = "the portal session has expired: open a new portal link"
	invalidSession = "the portal session token is not valid"
)

// checkTellsNothingElse fails if a refusal holds more than status and message,
// or repeats the token or any part of it, or the account.
func checkTellsNothingElse(t *testing.T, r reply, token string) {
	t.Helper()
	if len(r.body) != 2 || r.body["status"] != false {
		t.Errorf("refusal %s holds more than status and message", r.raw)
	}
	for _, part := range strings.Split(strings.TrimPrefix(token, portal.TokenPrefix), ".") {
		if len(part) >= 8 && strings.Contains(string(r.raw), part) {
			t.Errorf("refusal %s repeats part of the token", r.raw)
		}
	}
	if strings.Contains(string(r.raw), "acme") || strings.Contains(string(r.raw), "shop") {
		t.Errorf("refusal %s names the account or application", r.raw)
	}
}

// Tokens are stateless: another replica with the same secret accepts them.
func TestReplicasSharingTheSecretAcceptTokens(t *testing.T) {
	a, b := startService(t, nil), startService(t, nil)
	token := a.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)
	b.call(t, http.MethodGet, "/v1/messages", token, "").want(t, http.StatusOK)
}

func TestDashboardAccess(t *testing.T) {
	s := startService(t, nil)
	id := s.submit(t, acmeLive, "shop", "/a", 200)
	blog := s.submit(t, acmeLive, "blog", "/b", 200)
	for _, body := range []string{`{"app":"shop"}`, `{"name":"shop","expires_in":600}`} {
		r := s.call(t, http.MethodPost, "/v1/dashboard_access", acmeLive, body).want(t, http.StatusOK)
		if r.body["status"] != true || r.body["message"] == "" || len(r.body) != 3 {
			t.Errorf("%s: reply %s, want status, message and url", body, r.raw)
		}
		link, err := url.Parse(r.body["url"].(string))
		if err != nil || link.Path != portal.PagePath {
			t.Fatalf("%s: url %q", body, r.body["url"])
		}
		token := strings.TrimPrefix(link.Fragment, "token=")
		if ids := s.listedIDs(t, token, ""); !slices.Equal(ids, []string{id}) {
			t.Errorf("%s: the link's token lists %v, want [%s] and not %s", body, ids, id, blog)
		}
	}
}

func TestSessionRequestErrors(t *testing.T) {
	s := startService(t, nil)
	for _, tc := range []struct {
		name, body string
		status     int
		fields     []string
	}{
		{"empty name", `{"name":"","expires_in":3600}`, http.StatusBadRequest, []string{"name"}},
		{"blank name", `{"name":"   "}`, http.StatusBadRequest, []string{"name"}},
		{"too short", `{"name":"shop","expires_in":59}`, http.StatusBadRequest, []string{"expires_in"}},
		{"too long", `{"name":"shop","expires_in":604801}`, http.StatusBadRequest, []string{"expires_in"}},
		{"both wrong", `{"name":7,"expires_in":"1h"}`, http.StatusBadRequest, []string{"name", "expires_in"}},
		{"not an object", `["shop"]`, http.StatusBadRequest, nil},
		{"body too large", `{"name":"` + strings.Repeat("x", 20<<10) + `"}`, http.StatusRequestEntityTooLarge, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/portal/sessions", "/v1/dashboard_access"} {
				r := s.call(t, http.MethodPost, path, acmeLive, tc.body).want(t, tc.status)
				if r.body["status"] != false || r.body["message"] == "" || !slices.Equal(r.fields(), tc.fields) {
					t.Errorf("%s: reply %s, want fields %v", path, r.raw, tc.fields)
				}
			}
		})
	}

	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/portal/sessions", strings.NewReader(`{"name":"shop"}`))
	req.Header.Set("Authorization", "Bearer "+acmeLive)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: status %d, want 415", resp.StatusCode)
	}
	s.call(t, http.MethodPost, "/v1/portal/sessions", "", `{"name":"shop"}`).want(t, http.StatusUnauthorized)
	s.call(t, http.MethodPost, "/v1/portal/sessions", "rk_unknown", `{"name":"shop"}`).want(t, http.StatusUnauthorized)
}

// Links start with REQLOG_PUBLIC_URL when it is set.
func TestPublicURL(t *testing.T) {
	s := startService(t, func(c *portal.Config) { c.PublicURL = "https://logs.example.com/reqlog/" })
	data := s.session(t, acmeLive, `{"name":"shop"}`)
	if want := "https://logs.example.com/reqlog/portal#token=" + data["token"].(string); data["url"] != want {
		t.Errorf("url %q, want %q", data["url"], want)
	}
}

// Neither the token nor the secret ever reaches the service's log.
func TestTokensAreNotLogged(t *testing.T) {
	s := startService(t, nil)
	token := s.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)
	s.call(t, http.MethodGet, "/v1/messages", token, "").want(t, http.StatusOK)
	s.call(t, http.MethodGet, "/v1/messages?x="+token, token, "").want(t, http.StatusOK)
	if s.logs.Len() == 0 {
		t.Fatal("no access log at all: the check below would prove nothing")
	}
	signature := token[strings.LastIndex(token, ".")+1:]
	for name, v := range map[string]string{"token signature": signature, "secret": secret} {
		if logged(s.logs, v) {
			t.Errorf("the log holds the %s", name)
		}
	}
}

func TestRandomSecretWarns(t *testing.T) {
	s := startService(t, func(c *portal.Config) { c.Secret = nil })
	warnings := s.logs.FilterMessageSnippet("REQLOG_PORTAL_SECRET").All()
	if len(warnings) != 1 || len(warnings[0].Context) != 0 {
		t.Fatalf("want one warning about REQLOG_PORTAL_SECRET without fields, got %v", warnings)
	}
	token := s.session(t, acmeLive, `{"name":"shop"}`)["token"].(string)
	s.call(t, http.MethodGet, "/v1/messages", token, "").want(t, http.StatusOK)
	// Another process makes another secret.
	startService(t, func(c *portal.Config) { c.Secret = nil }).call(t, http.MethodGet, "/v1/messages", token, "").want(t, http.StatusUnauthorized)
}

// The page and its assets, with their policy; unknown assets are a JSON 404.
func TestServesThePage(t *testing.T) {
	s := startService(t, func(c *portal.Config) { c.FrameAncestors = []string{"'self' https://app.example.com"} })
	for path, mediaType := range map[string]string{
		"/portal":         "text/html",
		"/portal/app.js":  "text/javascript",
		"/portal/app.css": "text/css",
	} {
		r := s.call(t, http.MethodGet, path, "", "").want(t, http.StatusOK)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, mediaType) {
			t.Errorf("%s: Content-Type %q, want %s", path, ct, mediaType)
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'self' https://app.example.com") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if r.header.Get("Referrer-Policy") != "no-referrer" || r.header.Get("X-Request-Id") == "" {
			t.Errorf("%s: headers %v", path, r.header)
		}
	}
	for _, path := range []string{"/portal/index.html", "/portal/", "/portal/app.js/x", "/portal/../v1/messages"} {
		if r := s.call(t, http.MethodGet, path, "", ""); r.status != http.StatusNotFound || r.body["status"] != false {
			t.Errorf("GET %s: %d %s, want a JSON 404", path, r.status, r.raw)
		}
	}
}

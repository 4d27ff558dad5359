package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func writeRulesFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const yamlRules = `# the rules of two accounts
acme:
  privacy:
    - id: emails
      select: [body]
      match: {detector: email}
      action: {type: mask}
  ingest:
    - id: probes
      scope: {paths: [/healthz]}
      action: drop
globex:
  retention:
    - id: payments
      scope: {applications: [payments]}
      keep: 7d
`

// REQLOG_RULES_FILE in YAML or JSON: the same rule sets; a mistake stops
// start-up naming the setting, the account and the field.
func TestRulesFile(t *testing.T) {
	fromYAML, err := loadRulesFile(writeRulesFile(t, "rules.yaml", yamlRules))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromYAML) != 2 || fromYAML["acme"].Privacy[0].Match.Detector != "email" || fromYAML["globex"].Retention[0].Keep != "7d" {
		t.Fatalf("read %+v", fromYAML)
	}
	asJSON, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := loadRulesFile(writeRulesFile(t, "rules.json", string(asJSON)))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(fromJSON); !bytes.Equal(again, asJSON) {
		t.Errorf("JSON %s, YAML %s: want the same rule sets", again, asJSON)
	}
	for name, tc := range map[string]struct{ file, content, want string }{
		"unknown detector": {"r.yaml", "acme:\n  privacy: [{id: p, select: ['**'], match: {detector: dna}, action: {type: mask}}]\n", "privacy[0].match.detector"},
		"unknown field":    {"r.yaml", "acme:\n  masking: []\n", "masking"},
		"bad account":      {"r.yaml", "'ac me':\n  privacy: []\n", "ac me"},
		"not a mapping":    {"r.yaml", "- acme\n", "YAML"},
		"bad JSON":         {"r.json", `{"acme": {"privacy": [}}`, "JSON"},
	} {
		path := writeRulesFile(t, tc.file, tc.content)
		_, err := loadConfig(nil, envOf(map[string]string{"REQLOG_RULES_FILE": path}))
		var cfgErr *app.ConfigError
		if !errors.As(err, &cfgErr) || cfgErr.Setting != "REQLOG_RULES_FILE" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a configuration error of REQLOG_RULES_FILE naming %q", name, err, tc.want)
		}
	}
	cfg, err := loadConfig(nil, envOf(map[string]string{"REQLOG_RULES_FILE": writeRulesFile(t, "rules.yml", yamlRules),
		"REQLOG_RULES_POLL_INTERVAL": "500ms", "REQLOG_RULES_HASH_KEY": "a-hash-key-of-16+bytes"}))
	if err != nil || len(cfg.App.Rules.File) != 2 || cfg.App.Rules.Poll != 500*time.Millisecond || string(cfg.App.Rules.HashKey) != "a-hash-key-of-16+bytes" {
		t.Errorf("loaded %+v (%v)", cfg.App.Rules, err)
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"REQLOG_RULES_HASH_KEY": "short"})); err == nil || !strings.Contains(err.Error(), "REQLOG_RULES_HASH_KEY") {
		t.Errorf("a short hash key: %v", err)
	}
}

// The hash key is kept in the sqlite store's data directory, generated per
// run for the memory store, and never made up for a store replicas share.
func TestRulesHashKeyIsKeptWhereItCanBe(t *testing.T) {
	dir := t.TempDir()
	keyOf := func(store string) string {
		cfg := defaultConfig()
		cfg.Store, cfg.SQLite.Dir = store, dir
		_, unsaved, err := keepGenerated(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := unsaved.save(); err != nil {
			t.Fatal(err)
		}
		return string(cfg.App.Rules.HashKey)
	}
	first := keyOf(storeSQLite)
	if len(first) < app.MinRulesHashKey || keyOf(storeSQLite) != first {
		t.Errorf("sqlite: %q, then another; want one key, kept", first)
	}
	if memory := keyOf(storeMemory); len(memory) < app.MinRulesHashKey || memory == first {
		t.Errorf("memory: %q, want one of its own", memory)
	}
	for _, shared := range []string{storeMongoDB, storeElasticsearch} {
		if key := keyOf(shared); key != "" {
			t.Errorf("%s: generated %q; replicas would hash apart", shared, key)
		}
	}
}

// canaryPlaces are the places a secret hides in an exchange, each holding
// its own canary of a capture path.
type canaryPlaces struct{ email, token, partner, nested, inString, inForm string }

func canariesOf(path string) canaryPlaces {
	c := func(place string) string { return "cnry-" + path + "-" + place }
	return canaryPlaces{email: c("email") + "@example.com", token: c("token"), partner: c("partner"),
		nested: c("nested"), inString: c("instring") + "@example.org", inForm: c("form") + "@example.net"}
}

func (c canaryPlaces) all() []string {
	return []string{c.email, c.token, c.partner, c.nested, c.inString, c.inForm}
}

func (c canaryPlaces) query() string {
	return "/v1/users?token=" + url.QueryEscape(c.token) + "&page=2"
}

func (c canaryPlaces) body() string {
	inner, _ := json.Marshal(map[string]string{"contact": c.inString})
	body, _ := json.Marshal(map[string]any{"email": c.email, "profiles": []any{map[string]any{"tags": []string{"x"}, "national_id": c.nested}},
		"meta": string(inner)})
	return string(body)
}

func (c canaryPlaces) form() string { return "email=" + url.QueryEscape(c.inForm) + "&plan=pro" }

const canaryRules = `{"privacy": [
	{"id": "emails", "select": ["**"], "match": {"detector": "email"}, "action": {"type": "mask"}},
	{"id": "token", "select": ["query.token"], "action": {"type": "remove"}},
	{"id": "partner", "select": ["request.headers.x-partner-id"], "action": {"type": "hash"}},
	{"id": "national-ids", "select": ["body.**.national_id"], "action": {"type": "partial", "keep_last": 2}}]}`

// Canary values sent through the API, the Go client, the capturing proxy (a
// gzip reply) and the OTLP receiver, in a header of odd casing, a
// percent-encoded query value, a nested JSON array, JSON inside a string and
// a form body, are scrubbed before they reach the store: the store itself,
// read directly, holds none, and neither does any file of the data
// directory.
func TestCanariesAreScrubbedOnEveryCapturePath(t *testing.T) {
	const key = "rk_canary_test_key_1"
	proxied := canariesOf("proxy")
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		w.Header().Set("Content-Encoding", "gzip") // the proxy decodes it before the rules
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, proxied.form())
		_ = zw.Close()
	}))
	defer upstream.Close()
	dir := t.TempDir()
	var server *httpapi.Server
	var front *proxy.Server
	var store ports.MessageStore
	startGraph(t, map[string]string{
		"REQLOG_API_KEYS": "acme:live:" + key, "REQLOG_SQLITE_DIR": dir, "REQLOG_RULES_HASH_KEY": "canary-test-hash-key-0123",
		"REQLOG_PROXY_UPSTREAM": upstream.URL, "REQLOG_PROXY_ADDR": "127.0.0.1:0", "REQLOG_PROXY_NAME": "signup", "REQLOG_PROXY_API_KEY": key,
	}, &server, &front, &store)
	base := "http://" + server.Addr().String()
	authed := func(req *http.Request) *http.Request {
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		return req
	}

	put, _ := http.NewRequest(http.MethodPut, base+"/v1/rules", strings.NewReader(canaryRules))
	put.Header.Set("If-Match", `"0"`)
	put.Header.Set(app.RuleReasonHeader, "scrub the canaries")
	var saved struct{ Data struct{ Version int64 } }
	if status := call(t, authed(put), &saved); status != http.StatusOK || saved.Data.Version != 1 {
		t.Fatalf("PUT /v1/rules: %d %+v", status, saved)
	}

	viaAPI := canariesOf("api")
	item, _ := json.Marshal(map[string]any{"name": "signup", "created_at": time.Now().Unix(), "method": "POST", "path": viaAPI.query(),
		"request":  map[string]any{"header": map[string]string{"x-PaRtNeR-iD": viaAPI.partner, "Content-Type": "application/json"}, "body": viaAPI.body()},
		"response": map[string]any{"status_code": 201, "header": map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "body": viaAPI.form()}})
	post, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(item))
	var reply map[string]any
	if status := call(t, authed(post), &reply); status != http.StatusOK {
		t.Fatalf("POST /v1/messages: %d %v", status, reply)
	}

	viaClient := canariesOf("client")
	client, err := httpclient.New(base, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Submit(t.Context(), httpclient.Exchange{Name: "signup", CreatedAt: time.Now(), Method: "POST", Path: viaClient.query(),
		Request: httpclient.ExchangeRequest{Header: map[string][]string{"X-PARTNER-ID": {viaClient.partner}, "Content-Type": {"application/json"}},
			Body: viaClient.body()},
		Response: httpclient.ExchangeResponse{StatusCode: 201, Header: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: viaClient.form()}}); err != nil {
		t.Fatal(err)
	}

	through, _ := http.NewRequest(http.MethodPost, "http://"+front.Addr().String()+proxied.query(), strings.NewReader(proxied.body()))
	through.Header.Set("x-partner-ID", proxied.partner)
	through.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(through)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	viaOTLP := canariesOf("otlp")
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(base+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "signup"))))
	query := strings.TrimPrefix(viaOTLP.query(), "/v1/users?")
	_, span := tp.Tracer("canary").Start(t.Context(), "POST /v1/users", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(time.Now().Add(-time.Second)),
		trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("url.path", "/v1/users"),
			attribute.String("url.query", query), attribute.Int("http.response.status_code", 201),
			attribute.StringSlice("http.request.header.x-partner-id", []string{viaOTLP.partner}),
			attribute.StringSlice("http.request.header.content-type", []string{"application/json"}),
			attribute.StringSlice("http.response.header.content-type", []string{"application/x-www-form-urlencoded"}),
			attribute.String("http.request.body.content", viaOTLP.body()), attribute.String("http.response.body.content", viaOTLP.form())))
	span.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The store itself, until the proxy's exchange is there too.
	scope := domain.Scope{Account: "acme", Domain: "live"}
	var stored []domain.Message
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(stored) < 4 {
		select {
		case <-deadline:
			t.Fatalf("the store holds %d of the 4 messages", len(stored))
		case <-tick.C:
		}
		page, err := store.List(t.Context(), domain.Query{Scope: scope, Limit: 10}, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		stored = page.Messages
	}
	for _, m := range stored {
		raw, _ := json.Marshal(m)
		if !strings.HasPrefix(m.Path, "/v1/users?page=2") || !strings.Contains(string(raw), domain.Mask) {
			t.Errorf("stored %s: want the path without its token and masked values", raw)
		}
		if want := "email=" + url.QueryEscape(domain.Mask) + "&plan=pro"; m.Response.Body != want {
			t.Errorf("stored response body %q, want the form decoded and scrubbed, %q", m.Response.Body, want)
		}
		for _, c := range [...]canaryPlaces{viaAPI, viaClient, proxied, viaOTLP} {
			for _, canary := range c.all() {
				if strings.Contains(string(raw), canary) || strings.Contains(string(raw), url.QueryEscape(canary)) {
					t.Errorf("canary %q reached the store: %s", canary, raw)
				}
			}
		}
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range [...]canaryPlaces{viaAPI, viaClient, proxied, viaOTLP} {
			for _, canary := range c.all() {
				if bytes.Contains(data, []byte(canary)) || bytes.Contains(data, []byte(url.QueryEscape(canary))) {
					t.Errorf("canary %q is in the bytes of %s", canary, path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every rule set in docs/rules.md compiles, and its rules file loads: the
// examples are what users copy.
func TestRulesDocExamplesCompile(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n( *)```(json|yaml)\n(.*?)\n *```").FindAllSubmatch(doc, -1)
	sets := 0
	for _, b := range blocks {
		indent, lang, text := string(b[1]), string(b[2]), string(b[3])
		text = strings.ReplaceAll("\n"+text, "\n"+indent, "\n")
		if lang == "yaml" {
			if _, err := loadRulesFile(writeRulesFile(t, "rules.yaml", text)); err != nil {
				t.Errorf("the YAML example does not load: %v\n%s", err, text)
			}
			continue
		}
		rs, err := rules.Parse([]byte(text))
		if err == nil {
			_, err = rules.Compile(rs, []byte("a-docs-test-hash-key"))
		}
		if err != nil {
			t.Errorf("an example does not compile: %v\n%s", err, text)
		}
		sets++
	}
	if sets < 9 {
		t.Errorf("found %d JSON rule sets in docs/rules.md; the common cases are more", sets)
	}
}

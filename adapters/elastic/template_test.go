package elastic_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// mapping is the part of a mapping the tests read.
type mapping struct {
	Dynamic string `json:"dynamic"`
	Source  struct {
		Excludes []string `json:"excludes"`
	} `json:"_source"`
	Properties map[string]struct {
		Type     string `json:"type"`
		Analyzer string `json:"analyzer"`
		Enabled  *bool  `json:"enabled"`
		Fields   map[string]struct {
			Type string `json:"type"`
		} `json:"fields"`
	} `json:"properties"`
}

// checkMapping fails unless m is the strict mapping of mappings.json.
func checkMapping(t *testing.T, what string, m mapping) {
	t.Helper()
	checkFields(t, what, m)
	if !slices.Equal(m.Source.Excludes, []string{"text"}) {
		t.Errorf("%s: _source excludes %q, want the full-text field", what, m.Source.Excludes)
	}
}

// checkFields fails unless m has the fields of mappings.json.
func checkFields(t *testing.T, what string, m mapping) {
	t.Helper()
	if m.Dynamic != "strict" {
		t.Errorf("%s: dynamic = %q, want strict", what, m.Dynamic)
	}
	want := map[string]string{
		"id": "keyword", "reference": "keyword", "account": "keyword", "domain": "keyword",
		"name": "keyword", "method": "keyword", "path": "keyword", "route": "keyword", "ip_address": "ip",
		"status_code": "integer", "duration_ms": "double", "text": "text", "created_at": "date_nanos", "updated_at": "date_nanos",
		"visible_at": "date_nanos", "expires_at": "date_nanos", "request": "object", "response": "object",
	}
	for field, typ := range want {
		got, ok := m.Properties[field]
		switch {
		case !ok:
			t.Errorf("%s: no field %s", what, field)
		case got.Type != typ && !(typ == "object" && got.Type == ""):
			t.Errorf("%s: %s has type %q, want %q", what, field, got.Type, typ)
		}
	}
	if len(m.Properties) != len(want) {
		t.Errorf("%s: %d fields, want %d", what, len(m.Properties), len(want))
	}
	for _, side := range []string{"request", "response"} {
		if e := m.Properties[side].Enabled; e == nil || *e {
			t.Errorf("%s: %s is indexed, want enabled: false", what, side)
		}
	}
	if a := m.Properties["text"].Analyzer; a != "standard" {
		t.Errorf("%s: text analyzer %q, want standard", what, a)
	}
	if sub := m.Properties["ip_address"].Fields["keyword"].Type; sub != "keyword" {
		t.Errorf("%s: ip_address.keyword has type %q, want keyword", what, sub)
	}
}

func TestNewInstallsTemplate(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	name := cfg.IndexPrefix + "-messages"

	var templates struct {
		IndexTemplates []struct {
			Name          string `json:"name"`
			IndexTemplate struct {
				IndexPatterns []string `json:"index_patterns"`
				Template      struct {
					Settings struct {
						Index struct {
							Shards   string `json:"number_of_shards"`
							Replicas string `json:"auto_expand_replicas"`
							Refresh  string `json:"refresh_interval"`
						} `json:"index"`
					} `json:"settings"`
					Mappings mapping `json:"mappings"`
				} `json:"template"`
			} `json:"index_template"`
		} `json:"index_templates"`
	}
	c.must(http.MethodGet, "/_index_template/"+name, nil, &templates)
	if len(templates.IndexTemplates) != 1 {
		t.Fatalf("GET _index_template/%s: %d templates, want 1", name, len(templates.IndexTemplates))
	}
	tpl := templates.IndexTemplates[0].IndexTemplate
	if want := []string{cfg.IndexPrefix + "-messages-*"}; !slices.Equal(tpl.IndexPatterns, want) {
		t.Errorf("index patterns %q, want %q", tpl.IndexPatterns, want)
	}
	settings := tpl.Template.Settings.Index
	if settings.Shards != "1" || settings.Replicas != "0-1" || settings.Refresh != "250ms" {
		t.Errorf("settings: %s shards, %s replicas, refresh %s; want 1, 0-1, 250ms", settings.Shards, settings.Replicas, settings.Refresh)
	}
	checkMapping(t, "template", tpl.Template.Mappings)
	if lag := s.ReadLag(); lag != testRefresh {
		t.Errorf("ReadLag() = %s, want the refresh interval %s", lag, testRefresh)
	}

	// The first message creates its day's index from the template.
	m := message(t, time.Now())
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	index := cfg.IndexPrefix + "-messages-" + m.CreatedAt.UTC().Format("2006.01.02")
	var mappings map[string]struct {
		Mappings mapping `json:"mappings"`
	}
	c.must(http.MethodGet, "/"+index+"/_mapping", nil, &mappings)
	checkMapping(t, "index "+index, mappings[index].Mappings)
}

func TestNewIsIdempotentAndUpdatesExistingIndices(t *testing.T) {
	c := newCluster(t)
	first, cfg := newStore(t)
	m := message(t, time.Now())
	if err := first.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	index := cfg.IndexPrefix + "-messages-" + m.CreatedAt.UTC().Format("2006.01.02")
	// A purge that died after blocking writes leaves a block behind.
	c.must(http.MethodPut, "/"+index+"/_block/write", nil, nil)

	cfg.RefreshInterval = 300 * time.Millisecond
	cfg.Replicas = 2
	second := openStore(t.Context(), t, cfg)
	var settings map[string]struct {
		Settings struct {
			Index struct {
				Refresh  string `json:"refresh_interval"`
				Replicas string `json:"auto_expand_replicas"`
				Blocks   struct {
					Write string `json:"write"`
				} `json:"blocks"`
			} `json:"index"`
		} `json:"settings"`
	}
	c.must(http.MethodGet, "/"+index+"/_settings", nil, &settings)
	got := settings[index].Settings.Index
	if got.Refresh != "300ms" {
		t.Errorf("refresh interval of the existing index %s = %q after New with 300ms", index, got.Refresh)
	}
	if got.Blocks.Write == "true" {
		t.Errorf("the existing index %s is still write-blocked after New", index)
	}
	if got.Replicas != "0-2" {
		t.Errorf("auto_expand_replicas of the existing index %s = %q after New with 2 replicas", index, got.Replicas)
	}
	// A single node holds no replica: auto-expansion keeps the index green.
	var health struct {
		Status string `json:"status"`
	}
	c.must(http.MethodGet, "/_cluster/health/"+index+"?wait_for_status=green&timeout=10s", nil, &health)
	if health.Status != "green" {
		t.Errorf("health of %s on one node = %s, want green", index, health.Status)
	}
	again := message(t, m.CreatedAt.Add(time.Microsecond))
	if err := second.Append(t.Context(), []domain.Message{m, again}); err != nil {
		t.Fatalf("Append after the second New: %v", err)
	}
	waitReadable(t, second, again.CreatedAt.Add(time.Second), m, again)
}

// Header names may hold characters that Elasticsearch reads as paths or
// operators in field names; they are stored as values, so they round-trip.
func TestHeaderNamesWithDotsAndDollars(t *testing.T) {
	s, _ := newStore(t)
	m := message(t, time.Now())
	m.Request.Header = domain.Header{"X.Dotted.Name": {"a", "b"}, "$Dollar": {"c"}, "X.": {}, "Content-Type": {"text/plain"}}
	m.Response.Header = domain.Header{"X..Double": {"d"}, ".": {"e"}}
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	now := m.CreatedAt.Add(time.Second)
	waitReadable(t, s, now, m)
	got, err := s.Get(t.Context(), scope, m.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		name      string
		want, got domain.Header
	}{{"request", m.Request.Header, got.Request.Header}, {"response", m.Response.Header, got.Response.Header}} {
		if len(side.got) != len(side.want) {
			t.Errorf("%s header = %q, want %q", side.name, side.got, side.want)
		}
		for name, values := range side.want {
			if g, ok := side.got[name]; !ok || !slices.Equal(g, values) {
				t.Errorf("%s header %q = %q (present %v), want %q", side.name, name, g, ok, values)
			}
		}
	}
}

// mappingsV1 are the mappings of template version 1, before durations, routes
// and the full-text field.
const mappingsV1 = `{"dynamic": "strict", "properties": {
	"id": {"type": "keyword"}, "reference": {"type": "keyword"}, "account": {"type": "keyword"},
	"domain": {"type": "keyword"}, "name": {"type": "keyword"}, "method": {"type": "keyword"},
	"path": {"type": "keyword"}, "ip_address": {"type": "ip", "fields": {"keyword": {"type": "keyword"}}},
	"status_code": {"type": "integer"}, "created_at": {"type": "date_nanos"}, "updated_at": {"type": "date_nanos"},
	"visible_at": {"type": "date_nanos"}, "expires_at": {"type": "date_nanos"},
	"request": {"type": "object", "enabled": false}, "response": {"type": "object", "enabled": false}}}`

// An index created by an earlier reqlog takes the new fields at start-up, so
// today's index keeps accepting messages; its older documents read back without
// duration or sizes, are not found by q and count in the statistics everywhere
// but in top_paths.
func TestIndexOfTemplateV1KeepsWorking(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t)
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	index := cfg.IndexPrefix + "-messages-" + at.Format("2006.01.02")
	var v1 json.RawMessage = []byte(mappingsV1)
	c.must(http.MethodPut, "/"+index, map[string]any{"mappings": v1}, nil)
	old := message(t, at)
	old.Response.Body = `{"legacy":"old_ord_42"}`
	stamp := domain.FormatTime(at)
	c.must(http.MethodPut, "/"+index+"/_doc/"+old.ID+"?refresh=true", map[string]any{
		"id": old.ID, "reference": old.Reference, "account": old.Account, "domain": old.Domain, "name": old.Name,
		"method": old.Method, "path": old.Path, "status_code": old.StatusCode,
		"request":    map[string]any{"header": []any{}, "body": "", "content_type": ""},
		"response":   map[string]any{"header": []any{}, "body": old.Response.Body, "content_type": ""},
		"created_at": stamp, "updated_at": stamp, "visible_at": stamp,
		"expires_at": domain.FormatTime(old.ExpiresAt),
	}, nil)

	s := openStore(t.Context(), t, cfg)
	var mappings map[string]struct {
		Mappings mapping `json:"mappings"`
	}
	c.must(http.MethodGet, "/"+index+"/_mapping", nil, &mappings)
	checkFields(t, "the index of template version 1 after New", mappings[index].Mappings)

	fresh := message(t, at.Add(time.Microsecond))
	fresh.Path = "/v1/orders?page=2"
	fresh.Response.Body = `{"order":"ord_8f7d"}`
	fresh.Duration, fresh.HasDuration = 2500*time.Microsecond, true
	if err := s.Append(t.Context(), []domain.Message{fresh}); err != nil {
		t.Fatalf("Append into the index of template version 1: %v", err)
	}
	now := at.Add(time.Minute)
	waitReadable(t, s, now, fresh)
	got, err := s.Get(t.Context(), scope, old.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	// An older document's size is its stored body's length (record.Content).
	if got.HasDuration || got.Response.Size != len(old.Response.Body) || got.Response.Body != old.Response.Body {
		t.Errorf("old message read back as %+v", got)
	}
	for q, want := range map[string]int{"ord_8f7d": 1, "old_ord_42": 0} {
		page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: q}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != want {
			t.Errorf("List with q=%s: %d messages, want %d", q, len(page.Messages), want)
		}
	}
	stats := statsOnceCounted(t, s, hourStats(at), now, 2)
	if d := stats.Total.Duration; d.Count != 1 || d.P50 != 2.5 {
		t.Errorf("durations %+v, want the new message's only", d)
	}
	if want := []domain.KeyCount{{Key: "/v1/orders", Count: 1}}; !slices.Equal(stats.TopPaths, want) {
		t.Errorf("top paths %+v, want %+v (the old message has no route)", stats.TopPaths, want)
	}
}

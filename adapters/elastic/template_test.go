package elastic_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// mapping is the part of a mapping the tests read.
type mapping struct {
	Dynamic    string `json:"dynamic"`
	Properties map[string]struct {
		Type    string `json:"type"`
		Enabled *bool  `json:"enabled"`
		Fields  map[string]struct {
			Type string `json:"type"`
		} `json:"fields"`
	} `json:"properties"`
}

// checkMapping fails unless m is the strict mapping of mappings.json.
func checkMapping(t *testing.T, what string, m mapping) {
	t.Helper()
	if m.Dynamic != "strict" {
		t.Errorf("%s: dynamic = %q, want strict", what, m.Dynamic)
	}
	want := map[string]string{
		"id": "keyword", "reference": "keyword", "account": "keyword", "domain": "keyword",
		"name": "keyword", "method": "keyword", "path": "keyword", "ip_address": "ip",
		"status_code": "integer", "created_at": "date_nanos", "updated_at": "date_nanos",
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
							Replicas string `json:"number_of_replicas"`
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
	if settings.Shards != "1" || settings.Replicas != "0" || settings.Refresh != "250ms" {
		t.Errorf("settings: %s shards, %s replicas, refresh %s; want 1, 0, 250ms", settings.Shards, settings.Replicas, settings.Refresh)
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
	second := openStore(t.Context(), t, cfg)
	var settings map[string]struct {
		Settings struct {
			Index struct {
				Refresh string `json:"refresh_interval"`
				Blocks  struct {
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

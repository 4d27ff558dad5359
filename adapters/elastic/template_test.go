package elastic_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// mapping is the part of a mapping the tests read.
type mapping struct {
	Dynamic string `json:"dynamic"`
	Source  struct {
		Excludes []string `json:"excludes"`
	} `json:"_source"`
	Properties map[string]mappedField `json:"properties"`
}

type mappedField struct {
	Type         string                 `json:"type"`
	Analyzer     string                 `json:"analyzer"`
	IndexOptions string                 `json:"index_options"`
	Norms        *bool                  `json:"norms"`
	Enabled      *bool                  `json:"enabled"`
	Fields       map[string]mappedField `json:"fields"`
	Properties   map[string]mappedField `json:"properties"`
}

// checkMapping fails unless m is the strict mapping of mappings.json: the
// searched texts indexed in place, nothing left out of _source.
func checkMapping(t *testing.T, what string, m mapping) {
	t.Helper()
	checkFields(t, what, m, false)
	if len(m.Source.Excludes) != 0 {
		t.Errorf("%s: _source excludes %q, want nothing left out", what, m.Source.Excludes)
	}
}

// checkFields fails unless m has the fields of mappings.json, or those of an
// index created before in-place indexing (legacy): request and response not
// indexed, path without its text sub-field.
func checkFields(t *testing.T, what string, m mapping, legacy bool) {
	t.Helper()
	if m.Dynamic != "strict" {
		t.Errorf("%s: dynamic = %q, want strict", what, m.Dynamic)
	}
	want := map[string]string{
		"id": "keyword", "reference": "keyword", "account": "keyword", "domain": "keyword",
		"name": "keyword", "method": "keyword", "path": "keyword", "route": "keyword", "route_template": "keyword", "ip_address": "ip",
		"status_code": "integer", "duration_ms": "double", "text": "text", "created_at": "date_nanos", "updated_at": "date_nanos",
		"visible_at": "date_nanos", "expires_at": "date_nanos", "rules": "object", "subjects": "keyword", "request": "object", "response": "object",
		"sample_rate": "integer", "tally": "boolean", "retention_rule": "keyword", "bodies_expire_at": "date_nanos",
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
	checkSearched(t, what, "text", m.Properties["text"])
	if sub := m.Properties["ip_address"].Fields["keyword"].Type; sub != "keyword" {
		t.Errorf("%s: ip_address.keyword has type %q, want keyword", what, sub)
	}
	pathText, hasPathText := m.Properties["path"].Fields["text"]
	for _, side := range []string{"request", "response"} {
		content := m.Properties[side]
		if legacy {
			if e := content.Enabled; e == nil || *e {
				t.Errorf("%s: %s is indexed, want enabled: false", what, side)
			}
			continue
		}
		if e := content.Enabled; e != nil && !*e {
			t.Errorf("%s: %s is not indexed", what, side)
		}
		checkSearched(t, what, side+".body", content.Properties["body"])
		header := content.Properties["header"]
		checkSearched(t, what, side+".header.values", header.Properties["values"])
		for field, f := range map[string]mappedField{
			side + ".header.name": header.Properties["name"], side + ".content_type": content.Properties["content_type"],
			side + ".size": content.Properties["size"],
		} {
			if f.Type != "object" || f.Enabled == nil || *f.Enabled {
				t.Errorf("%s: %s is %+v, want an object with enabled: false (stored, not indexed)", what, field, f)
			}
		}
		if len(content.Properties) != 4 || len(header.Properties) != 2 {
			t.Errorf("%s: %s has fields %v, header %v; want header (name, values), body, content_type, size",
				what, side, content.Properties, header.Properties)
		}
	}
	switch {
	case legacy && hasPathText:
		t.Errorf("%s: path has a text sub-field, want none in an index created before in-place indexing", what)
	case !legacy && !hasPathText:
		t.Errorf("%s: path has no text sub-field", what)
	case !legacy:
		checkSearched(t, what, "path.text", pathText)
	}
}

// checkSearched fails unless f is a searched text: standard analyzer,
// positions (for phrases: the default, which an index's mapping leaves out),
// no norms (no scoring).
func checkSearched(t *testing.T, what, name string, f mappedField) {
	t.Helper()
	positions := f.IndexOptions == "positions" || f.IndexOptions == ""
	if f.Type != "text" || f.Analyzer != "standard" || !positions || f.Norms == nil || *f.Norms {
		t.Errorf("%s: %s is %+v, want text, standard analyzer, positions, no norms", what, name, f)
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
	checkFields(t, "the index of template version 1 after New", mappings[index].Mappings, true)

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
	st := statsOnceCounted(t, s, hourStats(at), now, 2)
	if d := st.Total.Duration; d.Count != 1 || d.P50 != 2.5 {
		t.Errorf("durations %+v, want the new message's only", d)
	}
	if want := []stats.KeyCount{{Key: "/v1/orders", Count: 1}}; !slices.Equal(st.TopPaths, want) {
		t.Errorf("top paths %+v, want %+v (the old message has no route)", st.TopPaths, want)
	}
}

// mappingsV2 are the mappings of template version 2: the searched texts sent a
// second time in "text", which _source leaves out.
const mappingsV2 = `{"dynamic": "strict", "_source": {"excludes": ["text"]}, "properties": {
	"id": {"type": "keyword"}, "reference": {"type": "keyword"}, "account": {"type": "keyword"},
	"domain": {"type": "keyword"}, "name": {"type": "keyword"}, "method": {"type": "keyword"},
	"path": {"type": "keyword"}, "route": {"type": "keyword"},
	"ip_address": {"type": "ip", "fields": {"keyword": {"type": "keyword"}}},
	"status_code": {"type": "integer"}, "duration_ms": {"type": "double"},
	"created_at": {"type": "date_nanos"}, "updated_at": {"type": "date_nanos"},
	"visible_at": {"type": "date_nanos"}, "expires_at": {"type": "date_nanos"},
	"request": {"type": "object", "enabled": false}, "response": {"type": "object", "enabled": false},
	"text": {"type": "text", "analyzer": "standard", "norms": false, "index_options": "positions"}}}`

// Indices of template version 2 keep taking messages with the full-text field,
// whether they existed when the store started or were created by an earlier
// reqlog since (a replica not yet upgraded); indices the store creates index
// the texts in place and carry no copy of them. q finds messages of both
// kinds, and those written by the earlier reqlog.
func TestIndexOfTemplateV2KeepsWorking(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t)
	today := time.Now().UTC().Truncate(time.Microsecond)
	day := func(daysAgo int) time.Time { return today.AddDate(0, 0, -daysAgo).Add(-time.Minute) }
	indexOf := func(at time.Time) string { return cfg.IndexPrefix + "-messages-" + at.UTC().Format("2006.01.02") }
	var v2 json.RawMessage = []byte(mappingsV2)
	before, since := day(2), day(1) // the days of two v2 indices: existing before New, created after
	c.must(http.MethodPut, "/"+indexOf(before), map[string]any{"mappings": v2}, nil)
	old := message(t, before)
	old.Response.Body = `{"legacy":"old_ord_42"}`
	c.must(http.MethodPut, "/"+indexOf(before)+"/_doc/"+old.ID, oldDocument(old), nil)

	s := openStore(t.Context(), t, cfg)
	c.must(http.MethodPut, "/"+indexOf(since), map[string]any{"mappings": v2}, nil)
	msgs := []domain.Message{message(t, before.Add(time.Microsecond)), message(t, since), message(t, today)}
	for i := range msgs {
		m := &msgs[i]
		m.Path = fmt.Sprintf("/v1/orders/ord_path_%d?page=2", i)
		m.Request.Body = fmt.Sprintf(`{"order":"ord_req_%d"}`, i)
		m.Response.Body = fmt.Sprintf(`{"order":"ord_res_%d"}`, i)
		m.Request.Header = domain.Header{"X-Trace": {fmt.Sprintf("trace req %d", i), "second value"}}
		m.Response.Header = domain.Header{"X-Trace": {fmt.Sprintf("trace res %d", i)}}
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatalf("Append into indices of template versions 2 and 3: %v", err)
	}
	now := today.Add(time.Minute)
	waitReadable(t, s, now, append(msgs, old)...)
	for i, m := range msgs {
		for _, q := range []string{
			fmt.Sprintf("ord_path_%d", i), fmt.Sprintf("ord_req_%d", i), fmt.Sprintf("ord_res_%d", i),
			fmt.Sprintf("trace req %d", i), fmt.Sprintf("Trace Res %d", i),
		} {
			checkFound(t, s, now, q, m)
		}
	}
	checkFound(t, s, now, "old_ord_42", old)
	checkFound(t, s, now, "ord_path_2 page", msgs[2])
	for _, q := range []string{
		"value trace", "0 second", // across two values of one side's headers, or two sides'
		"2 order", "page 2 order", "ord_req_2 ord_res_2", // across path and bodies
	} {
		checkFound(t, s, now, q)
	}

	// The legacy indices kept their layout; the new one has no copy in _source.
	var got map[string]struct {
		Mappings mapping `json:"mappings"`
	}
	c.must(http.MethodGet, "/"+indexOf(before)+","+indexOf(since)+","+indexOf(today)+"/_mapping", nil, &got)
	checkFields(t, "the index of template version 2", got[indexOf(before)].Mappings, true)
	// Created under the current template, the explicit mappings merged over
	// it: request and response stay unindexed, which is what tells the store.
	for _, side := range []string{"request", "response"} {
		if e := got[indexOf(since)].Mappings.Properties[side].Enabled; e == nil || *e {
			t.Errorf("the index of template version 2 created after New: %s is indexed", side)
		}
	}
	checkMapping(t, "the index created by the store", got[indexOf(today)].Mappings)

	// The write that created today's index sent the full-text field too (the
	// store could not know which template would make it); the next write
	// knows the index, and sends the record alone.
	later := message(t, today.Add(time.Microsecond))
	later.Response.Body = `{"order":"ord_later"}`
	if err := s.Append(t.Context(), []domain.Message{later}); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, s, now, later)
	checkFound(t, s, now, "ord_later", later)
	var doc struct {
		Source map[string]json.RawMessage `json:"_source"`
	}
	c.must(http.MethodGet, "/"+indexOf(today)+"/_doc/"+later.ID, nil, &doc)
	if _, ok := doc.Source["text"]; ok || doc.Source["request"] == nil {
		t.Errorf("the new index's document has fields %v, want the record without text", slices.Collect(maps.Keys(doc.Source)))
	}
}

// checkFound fails unless List with q finds exactly want, newest first.
func checkFound(t *testing.T, s *elastic.Store, now time.Time, q string, want ...domain.Message) {
	t.Helper()
	page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: q}}, now)
	if err != nil {
		t.Fatal(err)
	}
	var got, wantIDs []string
	for _, m := range page.Messages {
		got = append(got, m.ID)
	}
	for _, m := range want {
		wantIDs = append(wantIDs, m.ID)
	}
	if !slices.Equal(got, wantIDs) {
		t.Errorf("q=%q found %v, want %v", q, got, wantIDs)
	}
}

// oldDocument is m as template version 2's reqlog wrote it: the record and
// the full-text field, headers left out.
func oldDocument(m domain.Message) map[string]any {
	return map[string]any{
		"id": m.ID, "reference": m.Reference, "account": m.Account, "domain": m.Domain, "name": m.Name,
		"method": m.Method, "path": m.Path, "route": stats.PathOf(m.Path), "status_code": m.StatusCode,
		"request":    map[string]any{"header": []any{}, "body": m.Request.Body, "content_type": "", "size": len(m.Request.Body)},
		"response":   map[string]any{"header": []any{}, "body": m.Response.Body, "content_type": "", "size": len(m.Response.Body)},
		"created_at": domain.FormatTime(m.CreatedAt), "updated_at": domain.FormatTime(m.UpdatedAt),
		"visible_at": domain.FormatTime(m.VisibleAt), "expires_at": domain.FormatTime(m.ExpiresAt),
		"text": []string{m.Path, m.Response.Body},
	}
}

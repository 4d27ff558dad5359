package conformance

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Wire forms of the contract.
var (
	apiUUIDPattern      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	apiUUIDv7Pattern    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	apiReferencePattern = regexp.MustCompile(`^msg_[A-Za-z0-9]{12}$`)
	apiTimePattern      = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`)
)

// apiMessageKeys are exactly the keys of a fetched message: nothing internal
// (account, visibility, expiry) leaks.
var apiMessageKeys = []string{"id", "reference", "name", "domain", "ip_address", "status_code", "duration_ms",
	"request", "response", "path", "route", "method", "created_at", "updated_at", "sample_rate"}

// apiCheckMessage checks the wire format of the message at path and returns it.
func apiCheckMessage(t *testing.T, v any, path string) map[string]any {
	t.Helper()
	apiWantKeys(t, v, path, apiMessageKeys...)
	m := apiMust[map[string]any](t, v, path)
	// Below, paths are relative to the message.
	for _, key := range []string{"name", "ip_address", "path", "method"} {
		apiMust[string](t, m, key)
	}
	checks := []struct {
		key     string
		pattern *regexp.Regexp
	}{
		{"id", apiUUIDPattern}, {"reference", apiReferencePattern},
		{"created_at", apiTimePattern}, {"updated_at", apiTimePattern},
	}
	for _, c := range checks {
		if s := apiMust[string](t, m, c.key); !c.pattern.MatchString(s) {
			t.Errorf("%s.%s %q does not match %s", path, c.key, s, c.pattern)
		}
	}
	if d := apiMust[string](t, m, "domain"); !domain.ValidDomain(d) {
		t.Errorf("%s.domain is %q, want live or test", path, d)
	}
	if code := apiInt(t, m, "status_code"); code < 100 || code > 599 {
		t.Errorf("%s.status_code is %d", path, code)
	}
	if rate := apiInt(t, m, "sample_rate"); rate < 1 || rate > 1_000_000 {
		t.Errorf("%s.sample_rate is %d, want 1 to 1000000", path, rate)
	}
	if r, _ := apiAt(m, "route"); r != nil && !domain.ValidRoute(apiMust[string](t, m, "route")) {
		t.Errorf("%s.route is %s, want null or a route template", path, apiShow(r))
	}
	if d, _ := apiAt(m, "duration_ms"); d != nil {
		if ms, err := apiMust[json.Number](t, m, "duration_ms").Float64(); err != nil || ms < 0 || ms > 86_400_000 {
			t.Errorf("%s.duration_ms is %v, want null or 0 to 86400000", path, d)
		}
	}
	for _, side := range []string{"request", "response"} {
		apiWantKeys(t, m, side, "header", "body", "content_type", "size")
		if size := apiInt(t, m, side+".size"); size < 0 {
			t.Errorf("%s.%s.size is %d", path, side, size)
		}
		apiMust[string](t, m, side+".body")
		apiMust[string](t, m, side+".content_type")
		apiHeader(t, m, side)
	}
	return m
}

// apiHeader returns the header of side ("request" or "response") of a fetched
// message, requiring a map of name to array of strings.
func apiHeader(t *testing.T, m map[string]any, side string) map[string][]string {
	t.Helper()
	header := map[string][]string{}
	for name, values := range apiMust[map[string]any](t, m, side+".header") {
		list, ok := values.([]any)
		if !ok {
			t.Fatalf("%s.header.%s is %s, want an array of strings", side, name, apiShow(values))
		}
		header[name] = []string{}
		for _, value := range list {
			s, ok := value.(string)
			if !ok {
				t.Fatalf("%s.header.%s holds %s, want strings only", side, name, apiShow(values))
			}
			header[name] = append(header[name], s)
		}
	}
	return header
}

// apiAbsent as an edit value removes the field.
type apiAbsentField struct{}

var apiAbsent = apiAbsentField{}

// apiItem is a valid submission created at at, with edits applied: each key is a
// dotted path ("response.status_code"), each value the new value or apiAbsent.
func apiItem(at time.Time, edits map[string]any) map[string]any {
	item := map[string]any{
		"name":       "shop",
		"created_at": apiRFC3339(at),
		"method":     "GET",
		"path":       "/v1/orders",
		"ip_address": "203.0.113.7",
		"request": map[string]any{
			"header": map[string]any{"Accept": "application/json"},
			"body":   "",
		},
		"response": map[string]any{
			"status_code": 200,
			"header":      map[string]any{"Content-Type": "application/json"},
			"body":        `{"ok":true}`,
		},
	}
	// Deterministic order, so an edit of "request" happens before "request.body".
	paths := make([]string, 0, len(edits))
	for path := range edits {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		apiSet(item, path, edits[path])
	}
	return item
}

func apiSet(obj map[string]any, path string, value any) {
	steps := strings.Split(path, ".")
	for _, step := range steps[:len(steps)-1] {
		next, ok := obj[step].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[step] = next
		}
		obj = next
	}
	last := steps[len(steps)-1]
	if value == apiAbsent {
		delete(obj, last)
		return
	}
	obj[last] = value
}

// apiRFC3339 renders t as an RFC 3339 string at microsecond precision.
func apiRFC3339(t time.Time) string { return domain.Micro(t).Format(time.RFC3339Nano) }

// apiWire is how the service must render t.
func apiWire(t time.Time) string { return domain.FormatTime(t) }

// apiEntry is a submitted message's id and created_at, to compute the expected order.
type apiEntry struct {
	id string
	at time.Time
}

// apiNewestFirst returns the ids in the contract's order: created_at descending,
// ties by id descending.
func apiNewestFirst(entries []apiEntry) []string {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b apiEntry) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	ids := make([]string, len(sorted))
	for i, e := range sorted {
		ids[i] = e.id
	}
	return ids
}

// apiRaw is a JSON literal, sent or embedded exactly as written.
func apiRaw(s string) json.RawMessage { return json.RawMessage(s) }

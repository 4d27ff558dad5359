package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The contract's fixed texts and forms.
const (
	apiIngestedText = "Logs were successfully ingested and should show up shortly"
	apiFetchedText  = "successfully fetched messages"
	apiJSON         = "application/json"
)

// apiReply is one HTTP exchange with the service, its body decoded generically.
type apiReply struct {
	request string // "POST /v1/messages", for failure messages
	status  int
	header  http.Header
	raw     []byte
	body    any // decoded JSON (numbers as json.Number); nil if the body is not JSON
	jsonErr error
}

func (r apiReply) String() string {
	const max = 4000
	raw := string(r.raw)
	if len(raw) > max {
		raw = raw[:max] + "…"
	}
	return fmt.Sprintf("%s → %d %s", r.request, r.status, raw)
}

// do sends one request. header holds name, value pairs; an Authorization header
// is sent only when the caller puts one there.
func (e *apiEnv) do(t *testing.T, method, target string, body []byte, header ...string) apiReply {
	t.Helper()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.base+target, reader)
	if err != nil {
		t.Fatalf("build %s %s: %v", method, target, err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1]) // later pairs override earlier ones
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read reply: %v", method, target, err)
	}
	reply := apiReply{request: method + " " + target, status: resp.StatusCode, header: resp.Header, raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&reply.body); err != nil {
		reply.body, reply.jsonErr = nil, err
	} else if dec.More() {
		reply.body, reply.jsonErr = nil, fmt.Errorf("trailing data after the JSON value")
	}
	return reply
}

// apiBearer is the Authorization header pair for key.
func apiBearer(key APIKey) []string { return []string{"Authorization", "Bearer " + key.Key} }

// post submits body (raw []byte, or anything json.Marshal takes) as JSON with key.
func (e *apiEnv) post(t *testing.T, key APIKey, body any, header ...string) apiReply {
	t.Helper()
	return e.do(t, http.MethodPost, "/v1/messages", apiBody(t, body),
		append(append(apiBearer(key), "Content-Type", apiJSON), header...)...)
}

// get reads target with key.
func (e *apiEnv) get(t *testing.T, key APIKey, target string) apiReply {
	t.Helper()
	return e.do(t, http.MethodGet, target, nil, apiBearer(key)...)
}

func apiBody(t *testing.T, body any) []byte {
	t.Helper()
	switch raw := body.(type) {
	case []byte:
		return raw
	case json.RawMessage: // sent as written, even when it is not valid JSON
		return raw
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal body: %v", err)
	}
	return raw
}

// wantJSON fails unless the reply has status and a JSON body (every reply of the
// service is JSON, errors included).
func (r apiReply) wantJSON(t *testing.T, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r)
	}
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != apiJSON {
		t.Fatalf("Content-Type %q, want %s: %s", r.header.Get("Content-Type"), apiJSON, r)
	}
	if r.jsonErr != nil {
		t.Fatalf("body is not JSON (%v): %s", r.jsonErr, r)
	}
}

// wantOK checks a 200 success reply: exactly keys, status true and message text.
func (r apiReply) wantOK(t *testing.T, text string, keys ...string) {
	t.Helper()
	r.wantJSON(t, http.StatusOK)
	apiWantKeys(t, r.body, "", append([]string{"status", "message"}, keys...)...)
	if got := apiMust[bool](t, r.body, "status"); !got {
		t.Fatalf("status is false on a 200: %s", r)
	}
	if got := apiMust[string](t, r.body, "message"); got != text && text != "" || got == "" {
		t.Fatalf("message %q, want %q: %s", got, text, r)
	}
}

// wantError checks an error reply: the status, the body
// {"status": false, "message": "...", "errors": [{"field", "message"}]} and that
// the fields at fault are exactly fields (none: no errors entries at all).
func (r apiReply) wantError(t *testing.T, status int, fields ...string) {
	t.Helper()
	r.wantJSON(t, status)
	obj, ok := r.body.(map[string]any)
	if !ok {
		t.Fatalf("error body is not an object: %s", r)
	}
	for key := range obj {
		if key != "status" && key != "message" && key != "errors" {
			t.Errorf("error body has unexpected key %q: %s", key, r)
		}
	}
	if status, ok := obj["status"].(bool); !ok || status {
		t.Errorf("error body status is %v, want false: %s", obj["status"], r)
	}
	if msg, _ := obj["message"].(string); strings.TrimSpace(msg) == "" {
		t.Errorf("error body has no message for a person: %s", r)
	}
	var got []string
	if raw, present := obj["errors"]; present {
		list, ok := raw.([]any)
		if !ok {
			t.Fatalf("errors is %T, want an array: %s", raw, r)
		}
		for i := range list {
			path := fmt.Sprintf("errors.%d", i)
			apiWantKeys(t, r.body, path, "field", "message")
			field := apiMust[string](t, r.body, path+".field")
			if field == "" || apiMust[string](t, r.body, path+".message") == "" {
				t.Errorf("errors.%d has an empty field or message: %s", i, r)
			}
			got = append(got, field)
		}
	}
	want := slices.Clone(fields)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("fields at fault %q, want %q: %s", got, want, r)
	}
}

// apiIdentity is what a submission returns for each stored message.
type apiIdentity struct{ ID, Reference string }

func apiIDs(identities []apiIdentity) []string {
	ids := make([]string, len(identities))
	for i, identity := range identities {
		ids[i] = identity.ID
	}
	return ids
}

// ingestOne submits one object and returns the identity in data, which must be an
// object. An Idempotency-Key in header allows a name-based id instead of UUIDv7.
func (e *apiEnv) ingestOne(t *testing.T, key APIKey, item any, header ...string) apiIdentity {
	t.Helper()
	r := e.post(t, key, item, header...)
	r.wantOK(t, apiIngestedText, "data")
	return apiCheckIdentity(t, r, "data", !slices.Contains(header, "Idempotency-Key"))
}

// ingestBatch submits an array or envelope; data must list one identity per item.
func (e *apiEnv) ingestBatch(t *testing.T, key APIKey, body any, items int, header ...string) []apiIdentity {
	t.Helper()
	r := e.post(t, key, body, header...)
	r.wantOK(t, apiIngestedText, "data")
	data := apiMust[[]any](t, r.body, "data")
	if len(data) != items {
		t.Fatalf("data has %d identities for %d items: %s", len(data), items, r)
	}
	identities := make([]apiIdentity, len(data))
	for i := range data {
		identities[i] = apiCheckIdentity(t, r, "data."+strconv.Itoa(i), !slices.Contains(header, "Idempotency-Key"))
	}
	apiWantUnique(t, identities)
	return identities
}

func apiCheckIdentity(t *testing.T, r apiReply, path string, timeOrdered bool) apiIdentity {
	t.Helper()
	apiWantKeys(t, r.body, path, "id", "reference")
	identity := apiIdentity{ID: apiMust[string](t, r.body, path+".id"), Reference: apiMust[string](t, r.body, path+".reference")}
	pattern := apiUUIDPattern
	if timeOrdered {
		pattern = apiUUIDv7Pattern
	}
	if !pattern.MatchString(identity.ID) {
		t.Errorf("%s.id %q does not match %s: %s", path, identity.ID, pattern, r)
	}
	if !apiReferencePattern.MatchString(identity.Reference) {
		t.Errorf("%s.reference %q does not match %s: %s", path, identity.Reference, apiReferencePattern, r)
	}
	return identity
}

func apiWantUnique(t *testing.T, identities []apiIdentity) {
	t.Helper()
	seen := map[string]bool{}
	for _, identity := range identities {
		for _, s := range []string{identity.ID, identity.Reference} {
			if seen[s] {
				t.Errorf("%q is given to two messages: %v", s, identities)
			}
			seen[s] = true
		}
	}
}

// list fetches one page and checks the reply's shape and every message in it.
func (e *apiEnv) list(t *testing.T, key APIKey, query url.Values) (messages []map[string]any, pagination map[string]any) {
	t.Helper()
	target := "/v1/messages"
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r := e.get(t, key, target)
	r.wantOK(t, apiFetchedText, "messages", "pagination")
	for i := range apiMust[[]any](t, r.body, "messages") {
		messages = append(messages, apiCheckMessage(t, r.body, fmt.Sprintf("messages.%d", i)))
	}
	apiWantKeys(t, r.body, "pagination", "limit", "has_more", "next_cursor")
	pagination = apiMust[map[string]any](t, r.body, "pagination")
	hasMore := apiMust[bool](t, pagination, "has_more")
	next, _ := apiAt(pagination, "next_cursor")
	if cursor, ok := next.(string); hasMore && (!ok || cursor == "") || !hasMore && next != nil {
		t.Fatalf("pagination has_more %v with next_cursor %#v (a non-empty string exactly when more follow): %s", hasMore, next, r)
	}
	if limit := apiInt(t, pagination, "limit"); len(messages) > limit {
		t.Fatalf("%d messages on a page of limit %d: %s", len(messages), limit, r)
	}
	return messages, pagination
}

// listAll walks every page of query (100 per page unless query says otherwise)
// and fails on a message listed twice.
func (e *apiEnv) listAll(t *testing.T, key APIKey, query url.Values) []map[string]any {
	t.Helper()
	query = apiWith(query, "limit", "100")
	var all []map[string]any
	seen := map[string]bool{}
	for {
		page, pagination := e.list(t, key, query)
		for _, m := range page {
			id := m["id"].(string)
			if seen[id] {
				t.Fatalf("message %s listed twice while walking the pages", id)
			}
			seen[id] = true
		}
		all = append(all, page...)
		next, _ := pagination["next_cursor"].(string)
		if next == "" {
			return all
		}
		query.Set("cursor", next)
	}
}

// apiWith copies query with name set to value unless query already sets name.
func apiWith(query url.Values, name, value string) url.Values {
	out := url.Values{}
	for k, vs := range query {
		out[k] = slices.Clone(vs)
	}
	if !out.Has(name) {
		out.Set(name, value)
	}
	return out
}

// fetch reads one message by id or reference, requiring it to be there.
func (e *apiEnv) fetch(t *testing.T, key APIKey, idOrReference string) map[string]any {
	t.Helper()
	r := e.get(t, key, "/v1/messages/"+url.PathEscape(idOrReference))
	r.wantOK(t, "", "data", "rules")
	apiWantKeys(t, r.body, "rules", "version", "source", "rescrubbed_by", "changes")
	return apiCheckMessage(t, r.body, "data")
}

// wantAbsent requires that a lookup of idOrReference with key is a 404.
func (e *apiEnv) wantAbsent(t *testing.T, key APIKey, idOrReference string) {
	t.Helper()
	e.get(t, key, "/v1/messages/"+url.PathEscape(idOrReference)).wantError(t, http.StatusNotFound)
}

// reveal moves the clock past the visibility delay of what was just stored and
// waits until ids are listed for key.
func (e *apiEnv) reveal(t *testing.T, key APIKey, ids ...string) []map[string]any {
	t.Helper()
	e.clock.Advance(e.cfg.Policy.VisibilityDelay)
	return e.awaitListed(t, key, ids...)
}

// awaitListed polls the listing until every id is in it: a store may serve reads
// up to ReadLag behind its writes.
func (e *apiEnv) awaitListed(t *testing.T, key APIKey, ids ...string) []map[string]any {
	t.Helper()
	var all []map[string]any
	e.poll(t, func() (done bool, failure string) {
		all = e.listAll(t, key, nil)
		listed := apiByID(all)
		missing := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return listed[id] != nil })
		return len(missing) == 0, fmt.Sprintf("messages %q of %s:%s never listed at %s; listed: %s", missing,
			key.Account, key.Domain, e.clock.Now().Format(time.RFC3339Nano), apiShow(all))
	})
	return all
}

// poll runs try every 20 ms until it is done, for at most the store's ReadLag
// plus 15 s; then the test fails with try's last failure.
func (e *apiEnv) poll(t *testing.T, try func() (done bool, failure string)) {
	t.Helper()
	deadline := time.NewTimer(e.store.ReadLag() + 15*time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, failure := try()
		if done {
			return
		}
		select {
		case <-deadline.C:
			t.Fatal(failure)
		case <-tick.C:
		}
	}
}

// wantStoredExactly proves that key's scope holds exactly ids (plus a control it
// submits now): once the control, written last, is listed, anything stored before
// it is listed too.
func (e *apiEnv) wantStoredExactly(t *testing.T, key APIKey, ids ...string) {
	t.Helper()
	control := e.ingestOne(t, key, apiItem(e.clock.Now().Add(-time.Second), map[string]any{"name": "control"}))
	all := e.reveal(t, key, append(slices.Clone(ids), control.ID)...)
	if len(all) != len(ids)+1 {
		t.Fatalf("%s:%s lists %d messages, want %d plus the control: %s", key.Account, key.Domain, len(all), len(ids), apiShow(all))
	}
}

func apiByID(messages []map[string]any) map[string]map[string]any {
	byID := make(map[string]map[string]any, len(messages))
	for _, m := range messages {
		byID[m["id"].(string)] = m
	}
	return byID
}

func apiListedIDs(messages []map[string]any) []string {
	ids := make([]string, len(messages))
	for i, m := range messages {
		ids[i] = m["id"].(string)
	}
	return ids
}

// apiAt returns the value at a dotted path such as "data.0.request.header"
// (numbers index arrays); ok is false when any step is missing.
func apiAt(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	for _, step := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[step]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// apiMust returns the value at path as a T, failing if it is missing or of
// another JSON type.
func apiMust[T any](t *testing.T, v any, path string) T {
	t.Helper()
	got, ok := apiAt(v, path)
	if !ok {
		t.Fatalf("%s is missing in %s", path, apiShow(v))
	}
	typed, ok := got.(T)
	if !ok {
		var want T
		t.Fatalf("%s is %T (%s), want %T, in %s", path, got, apiShow(got), want, apiShow(v))
	}
	return typed
}

// apiInt returns the JSON integer at path.
func apiInt(t *testing.T, v any, path string) int {
	t.Helper()
	n := apiMust[json.Number](t, v, path)
	i, err := strconv.Atoi(string(n))
	if err != nil {
		t.Fatalf("%s is %s, want an integer, in %s", path, n, apiShow(v))
	}
	return i
}

// apiWantKeys fails unless the object at path has exactly keys.
func apiWantKeys(t *testing.T, v any, path string, keys ...string) {
	t.Helper()
	obj := apiMust[map[string]any](t, v, path)
	got := make([]string, 0, len(obj))
	for k := range obj {
		got = append(got, k)
	}
	want := slices.Clone(keys)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%q has keys %q, want exactly %q: %s", path, got, want, apiShow(obj))
	}
}

func apiShow(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	const max = 4000
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}

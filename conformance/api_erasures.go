package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// The erasure part of the HTTP suite (RunAPITests): /v1/erasures and
// /v1/subjects/messages, black-box.

// subjectRules are subject keys: the X-User-Id header, e-mail addresses.
const subjectRules = `{"subjects": [{"id": "user", "select": ["request.headers.x-user-id"]}, {"id": "emails", "detector": "email"}]}`

// erase POSTs an erasure request as key.
func (e *apiEnv) erase(t *testing.T, key APIKey, body any) apiReply {
	t.Helper()
	return e.do(t, http.MethodPost, "/v1/erasures", apiBody(t, body), append(apiBearer(key), "Content-Type", apiJSON)...)
}

// awaitErasure polls the erasure id's receipt until its state is state,
// and returns it.
func (e *apiEnv) awaitErasure(t *testing.T, key APIKey, id, state string) apiReply {
	t.Helper()
	var r apiReply
	e.poll(t, func() (bool, string) {
		r = e.get(t, key, "/v1/erasures/"+id)
		got, _ := apiAt(r.body, "data.state")
		return r.status == http.StatusOK && got == state, fmt.Sprintf("the erasure is not %s: %s", state, r)
	})
	return r
}

// startErasing starts the service with acme's subject keys (subjectRules),
// skipping the test on a store that keeps no subject index.
func startErasing(t *testing.T, s apiSuite) *apiEnv {
	t.Helper()
	e := s.start(t)
	if _, ok := e.store.(ports.Eraser); !ok {
		t.Skipf("%T keeps no subject index (ports.Eraser): the erasure endpoints answer 404", e.store)
	}
	e.putRules(t, apiAcmeLive, subjectRules, 0, "subject keys for erasures").wantOK(t, "", "data")
	return e
}

// An erasure is asked with an API key: 202 with its receipt, pending, and
// from then no read returns a message of its subject (list, get, search,
// export, statistics read from messages, a portal session's list) while the erasure job hides
// them in the background; other messages stay. The receipt then shows them
// hidden. A dry run counts and changes nothing; the receipt
// and the audit list never show the values; a portal session, another
// account and a request naming no subject are refused, changing nothing.
// A subject's messages are listed for an access request.
func apiTestErasures(t *testing.T, s apiSuite) {
	e := startErasing(t, s)
	at := e.clock.Now().Add(-time.Minute)
	ana := e.ingestOne(t, apiAcmeLive, apiItem(at, map[string]any{"request.header": map[string]any{"X-User-Id": "U-77"}}))
	anaMail := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(time.Second), map[string]any{"request.body": `{"email":"ana.canary@example.com","note":"canary"}`}))
	bob := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(2*time.Second), map[string]any{"request.body": `{"email":"bob@example.com","note":"canary"}`}))
	e.reveal(t, apiAcmeLive, ana.ID, anaMail.ID, bob.ID)
	subjects := []string{"u-77", "Ana.Canary@example.com"}

	// Access request: the subject's messages, in the key's scope.
	r := e.get(t, apiAcmeLive, "/v1/subjects/messages?"+url.Values{"value": {"ana.canary@example.com"}}.Encode())
	r.wantOK(t, "", "messages", "pagination")
	if got := apiMust[[]any](t, r.body, "messages"); len(got) != 1 || apiMust[string](t, got[0], "id") != anaMail.ID {
		t.Errorf("ana's messages = %v, want %s", got, anaMail.ID)
	}
	e.get(t, apiAcmeLive, "/v1/subjects/messages").wantError(t, http.StatusBadRequest, "value")

	// Refusals change nothing.
	portal := e.portalSession(t, apiAcmeLive)
	e.erase(t, portal, map[string]any{"subjects": subjects}).wantError(t, http.StatusForbidden)
	e.erase(t, apiAcmeLive, map[string]any{"subjects": []string{}}).wantError(t, http.StatusBadRequest, "subjects")
	e.erase(t, apiAcmeLive, map[string]any{"subjects": subjects, "future": "never"}).wantError(t, http.StatusBadRequest, "future")
	e.erase(t, apiAcmeLive, map[string]any{"subject": "u-77"}).wantError(t, http.StatusBadRequest)
	e.erase(t, apiAcmeLive, map[string]any{"subjects": subjects, "dry_run": nil}).wantError(t, http.StatusBadRequest, "dry_run")
	dry := e.erase(t, apiAcmeLive, map[string]any{"subjects": subjects, "dry_run": true})
	dry.wantOK(t, "", "data")
	if n := apiMust[json.Number](t, dry.body, "data.messages").String(); n != "2" {
		t.Errorf("a dry run counts %s messages, want 2: %s", n, dry)
	}
	if got := len(e.listAll(t, apiAcmeLive, nil)); got != 3 {
		t.Fatalf("after the refusals and a dry run %d messages are listed, want 3", got)
	}
	searched := url.Values{"interval": {"1h"}, "q": {"canary"}} // read from messages: no rollup answers a q
	if n := apiInt(t, e.stats(t, apiAcmeLive, searched), "total.count"); n != 2 {
		t.Fatalf("the statistics of q=canary count %d messages before the erasure, want 2", n)
	}

	r = e.erase(t, apiAcmeLive, map[string]any{"subjects": subjects, "reason": "ticket 4711"})
	r.wantJSON(t, http.StatusAccepted)
	id := apiMust[string](t, r.body, "data.id")
	if state := apiMust[string](t, r.body, "data.state"); state != "pending" || r.header.Get("Location") != "/v1/erasures/"+id {
		t.Errorf("the erasure's reply: state %s, Location %q: %s", state, r.header.Get("Location"), r)
	}
	if strings.Contains(string(r.raw), "canary") || strings.Contains(strings.ToLower(string(r.raw)), "u-77") {
		t.Errorf("the receipt shows a subject's value: %s", r)
	}
	for _, gone := range []apiIdentity{ana, anaMail} {
		e.wantAbsent(t, apiAcmeLive, gone.ID)
		e.wantAbsent(t, apiAcmeLive, gone.Reference)
	}
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, nil)); !slices.Equal(got, []string{bob.ID}) {
		t.Errorf("listed after the erasure: %v, want bob's %s", got, bob.ID)
	}
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, url.Values{"q": {"canary"}})); !slices.Equal(got, []string{bob.ID}) {
		t.Errorf("q=canary after the erasure: %v, want bob's %s", got, bob.ID)
	}
	if got := apiListedIDs(e.exportNDJSON(t, apiAcmeLive, url.Values{"format": {"ndjson"}})); !slices.Equal(got, []string{bob.ID}) {
		t.Errorf("the export after the erasure: %v, want bob's %s", got, bob.ID)
	}
	if n := apiInt(t, e.stats(t, apiAcmeLive, searched), "total.count"); n != 1 {
		t.Errorf("the statistics of q=canary count %d messages after the erasure, want bob's 1", n)
	}
	if got := apiListedIDs(e.listAll(t, portal, nil)); !slices.Equal(got, []string{bob.ID}) {
		t.Errorf("a portal session lists %v after the erasure, want bob's %s", got, bob.ID)
	}

	receipt := e.awaitErasure(t, apiAcmeLive, id, "hidden")
	receipt.wantOK(t, "", "data")
	apiWantKeys(t, receipt.body, "data", "id", "state", "future", "reason", "key_id", "subjects", "message_id", "messages", "partitions",
		"asked_at", "hidden_at", "deleted_at")
	if n := apiMust[json.Number](t, receipt.body, "data.messages.hidden").String(); n != "2" {
		t.Errorf("the receipt counts %s hidden, want 2: %s", n, receipt)
	}
	e.get(t, apiAcmeTest, "/v1/erasures/"+id).wantOK(t, "", "data") // the account's, either domain
	e.get(t, apiGlobexLive, "/v1/erasures/"+id).wantError(t, http.StatusNotFound)
	e.get(t, portal, "/v1/erasures/"+id).wantError(t, http.StatusForbidden)
	audit := e.get(t, apiAcmeLive, "/v1/erasures")
	audit.wantOK(t, "", "data", "pagination")
	if list := apiMust[[]any](t, audit.body, "data"); len(list) != 1 || apiMust[string](t, list[0], "id") != id {
		t.Errorf("the audit list: %s", audit)
	}
	if list := apiMust[[]any](t, e.get(t, apiGlobexLive, "/v1/erasures").body, "data"); len(list) != 0 {
		t.Errorf("another account's audit list holds %d erasures, want none", len(list))
	}
}

// An erasure by message id erases that message and every message of its
// subjects; the receipt counts them per partition of the store. A
// malformed id is 400 naming message_id; another account's message is 404,
// as a message no one has: nothing is hidden.
func apiTestErasuresByMessageID(t *testing.T, s apiSuite) {
	e := startErasing(t, s)
	at := e.clock.Now().Add(-time.Minute)
	ana := e.ingestOne(t, apiAcmeLive, apiItem(at, map[string]any{"request.header": map[string]any{"X-User-Id": "U-77"},
		"request.body": `{"email":"ana.canary@example.com"}`}))
	anaByUser := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(time.Second), map[string]any{"request.header": map[string]any{"X-User-Id": "u-77"}}))
	bob := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(2*time.Second), map[string]any{"request.body": `{"email":"bob@example.com"}`}))
	e.reveal(t, apiAcmeLive, ana.ID, anaByUser.ID, bob.ID)

	e.erase(t, apiAcmeLive, map[string]any{"message_id": "ana"}).wantError(t, http.StatusBadRequest, "message_id")
	e.erase(t, apiGlobexLive, map[string]any{"message_id": ana.ID}).wantError(t, http.StatusNotFound)
	e.erase(t, apiAcmeLive, map[string]any{"message_id": "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"}).wantError(t, http.StatusNotFound)
	if got := len(e.listAll(t, apiAcmeLive, nil)); got != 3 {
		t.Fatalf("after the refusals %d messages are listed, want 3", got)
	}

	r := e.erase(t, apiAcmeLive, map[string]any{"message_id": ana.ID})
	r.wantJSON(t, http.StatusAccepted)
	if got := apiMust[string](t, r.body, "data.message_id"); got != ana.ID {
		t.Errorf("the receipt's message_id = %s, want %s", got, ana.ID)
	}
	e.wantAbsent(t, apiAcmeLive, ana.ID)
	e.wantAbsent(t, apiAcmeLive, anaByUser.ID)
	r = e.awaitErasure(t, apiAcmeLive, apiMust[string](t, r.body, "data.id"), "hidden")
	if n := apiMust[json.Number](t, r.body, "data.messages.hidden").String(); n != "2" {
		t.Errorf("the erasure by message id hid %s messages, want 2 (the message and u-77's other): %s", n, r)
	}
	var inPartitions int64
	for _, p := range apiMust[[]any](t, r.body, "data.partitions") {
		n, err := apiMust[json.Number](t, p, "hidden").Int64()
		if err != nil {
			t.Fatal(err)
		}
		inPartitions += n
	}
	if inPartitions != 2 {
		t.Errorf("the partitions count %d hidden, want 2: %s", inPartitions, r)
	}
	if strings.Contains(string(r.raw), "canary") || strings.Contains(strings.ToLower(string(r.raw)), "u-77") {
		t.Errorf("the receipt shows a subject's value: %s", r)
	}
	e.wantAbsent(t, apiAcmeLive, ana.ID)
	e.wantAbsent(t, apiAcmeLive, anaByUser.ID)
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, nil)); !slices.Equal(got, []string{bob.ID}) {
		t.Errorf("listed after the erasure: %v, want bob's %s", got, bob.ID)
	}
}

// Messages stored before the account's subject keys are indexed by a
// backfill (POST /v1/subjects/backfill, a job read as re-scrubs are): then
// GET /v1/subjects/messages finds them and an erasure erases them, in both
// domains; before it, neither does. Bad requests are 400s naming the
// field, a portal session is refused.
func apiTestSubjectBackfill(t *testing.T, s apiSuite) {
	e := s.start(t)
	if _, ok := e.store.(ports.SubjectIndexer); !ok {
		t.Skipf("%T is no ports.SubjectIndexer: POST /v1/subjects/backfill answers 404", e.store)
	}
	backfill := func(key APIKey, body string) apiReply {
		return e.do(t, http.MethodPost, "/v1/subjects/backfill", []byte(body), append(apiBearer(key), "Content-Type", apiJSON)...)
	}
	at := e.clock.Now().Add(-time.Minute)
	old := apiItem(at, map[string]any{"request.header": map[string]any{"X-User-Id": "U-88"}})
	anaLive := e.ingestOne(t, apiAcmeLive, old)
	anaTest := e.ingestOne(t, apiAcmeTest, old)
	bob := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(time.Second), map[string]any{"request.body": `{"email":"bob@example.com"}`}))
	nobody := e.ingestOne(t, apiAcmeLive, apiItem(at.Add(2*time.Second), nil))
	e.reveal(t, apiAcmeLive, anaLive.ID, bob.ID, nobody.ID)
	e.awaitListed(t, apiAcmeTest, anaTest.ID)
	rangeBody := fmt.Sprintf(`{"from": %q, "to": %q}`, apiRFC3339(at.Add(-time.Hour)), apiRFC3339(at.Add(time.Hour)))

	backfill(apiAcmeLive, rangeBody).wantError(t, http.StatusBadRequest) // no rule set, so no subject keys
	e.putRules(t, apiAcmeLive, subjectRules, 0, "subject keys, after the messages").wantOK(t, "", "data")
	ana := "/v1/subjects/messages?" + url.Values{"value": {"u-88"}}.Encode()
	if got := apiMust[[]any](t, e.get(t, apiAcmeLive, ana).body, "messages"); len(got) != 0 {
		t.Fatalf("before the backfill the subject index finds %d messages stored before the keys, want none", len(got))
	}
	backfill(apiAcmeLive, `{}`).wantError(t, http.StatusBadRequest, "from")
	backfill(e.portalSession(t, apiAcmeLive), rangeBody).wantError(t, http.StatusForbidden)

	r := backfill(apiAcmeLive, rangeBody)
	r.wantJSON(t, http.StatusAccepted)
	if apiMust[string](t, r.body, "data.kind") != "subjects" || !strings.HasPrefix(r.header.Get("Location"), "/v1/rules/rescrub/") {
		t.Fatalf("the backfill's reply: %s (Location %q)", r, r.header.Get("Location"))
	}
	e.clock.Advance(time.Minute) // a job starts after the rules' poll interval
	number, err := apiMust[json.Number](t, r.body, "data.id").Int64()
	if err != nil {
		t.Fatal(err)
	}
	job := e.awaitRescrub(t, apiAcmeLive, number)
	if job["state"] != "done" || job["scanned"] != json.Number("4") || job["changed"] != json.Number("3") || job["skipped"] != json.Number("1") {
		t.Fatalf("the backfill ended as %s, want done, 4 scanned, 3 indexed (ana's two, bob's), 1 skipped", apiShow(job))
	}
	for key, want := range map[APIKey]string{apiAcmeLive: anaLive.ID, apiAcmeTest: anaTest.ID} {
		if got := apiMust[[]any](t, e.get(t, key, ana).body, "messages"); len(got) != 1 || apiMust[string](t, got[0], "id") != want {
			t.Errorf("%s: u-88's messages after the backfill = %v, want %s", key.Domain, got, want)
		}
	}

	erased := e.erase(t, apiAcmeLive, map[string]any{"subjects": []string{"U-88"}})
	erased.wantJSON(t, http.StatusAccepted)
	erased = e.awaitErasure(t, apiAcmeLive, apiMust[string](t, erased.body, "data.id"), "hidden")
	if n := apiMust[json.Number](t, erased.body, "data.messages.hidden").String(); n != "2" {
		t.Errorf("the erasure after the backfill hid %s messages, want 2: %s", n, erased)
	}
	e.wantAbsent(t, apiAcmeLive, anaLive.ID)
	e.wantAbsent(t, apiAcmeTest, anaTest.ID)
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, nil)); !slices.Equal(got, []string{nobody.ID, bob.ID}) {
		t.Errorf("listed after the erasure: %v, want %s and bob's %s", got, nobody.ID, bob.ID)
	}
}

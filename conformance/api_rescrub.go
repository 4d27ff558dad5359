package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// The re-scrub part of the HTTP suite (RunAPITests): POST and GET
// /v1/rules/rescrub, black-box, and what a re-scrub leaves of values stored
// before their rule.

// startRescrub posts a re-scrub request of body with key.
func (e *apiEnv) startRescrub(t *testing.T, key APIKey, body string) apiReply {
	t.Helper()
	return e.do(t, http.MethodPost, "/v1/rules/rescrub", []byte(body), append(apiBearer(key), "Content-Type", apiJSON)...)
}

// awaitRescrub polls job number of key's account until it is no longer
// running, and returns it.
func (e *apiEnv) awaitRescrub(t *testing.T, key APIKey, number int64) map[string]any {
	t.Helper()
	var job map[string]any
	e.poll(t, func() (bool, string) {
		r := e.get(t, key, fmt.Sprintf("/v1/rules/rescrub/%d", number))
		r.wantOK(t, "", "data")
		job = apiMust[map[string]any](t, r.body, "data")
		return job["state"] != "running", fmt.Sprintf("re-scrub %d still running: %s", number, r)
	})
	return job
}

// Values stored before their rule are gone once a re-scrub is done: from
// both domains of the account, from reads, q and exports, and each
// message records the version that re-scrubbed it and what changed; a
// second job while one runs is a 409, bad requests are 400s naming the
// field, a portal session is refused, and another account is left alone.
func apiTestRescrub(t *testing.T, s apiSuite) {
	e := s.start(t)
	if _, ok := e.store.(ports.MessageRewriter); !ok {
		t.Skipf("%T is not a ports.MessageRewriter: re-scrubs are off on it (404)", e.store)
	}
	const canary = "c4nary-rescrub-77"
	item := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"path": "/v1/reset?token=" + canary + "&page=2",
		"request.body": `{"email":"` + canary + `","plan":"pro"}`})
	live := e.ingestOne(t, apiAcmeLive, item)
	test := e.ingestOne(t, apiAcmeTest, item)
	globex := e.ingestOne(t, apiGlobexLive, item)
	e.reveal(t, apiAcmeLive, live.ID)
	e.awaitListed(t, apiAcmeTest, test.ID)
	e.awaitListed(t, apiGlobexLive, globex.ID)
	from, to := apiRFC3339(e.clock.Now().Add(-time.Hour)), apiRFC3339(e.clock.Now().Add(time.Hour))
	rangeBody := fmt.Sprintf(`{"from": %q, "to": %q}`, from, to)

	e.startRescrub(t, apiAcmeLive, rangeBody).wantError(t, http.StatusBadRequest) // no rule set to run yet
	e.putRules(t, apiAcmeLive, `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "remove"}},
		{"id": "canaries", "select": ["body"], "match": {"pattern": "c4nary-[a-z]+-[0-9]+"}, "action": {"type": "mask"}}]}`,
		0, "scrub what was stored too").wantOK(t, "", "data")
	for _, bad := range []struct {
		body   string
		fields []string
	}{
		{`{}`, []string{"from"}},
		{fmt.Sprintf(`{"from": %q}`, from), []string{"to"}},
		{fmt.Sprintf(`{"from": "yesterday", "to": %q}`, to), []string{"from"}},
		{fmt.Sprintf(`{"from": %q, "to": %q}`, to, from), []string{"to"}},
		{fmt.Sprintf(`{"from": %q, "to": %q, "applications": [""]}`, from, to), []string{"applications"}},
		{fmt.Sprintf(`{"from": %q, "to": %q, "domains": ["live"]}`, from, to), nil},
		{`[`, nil},
	} {
		e.startRescrub(t, apiAcmeLive, bad.body).wantError(t, http.StatusBadRequest, bad.fields...)
	}
	e.startRescrub(t, e.portalSession(t, apiAcmeLive), rangeBody).wantError(t, http.StatusForbidden)

	r := e.startRescrub(t, apiAcmeLive, rangeBody)
	r.wantJSON(t, http.StatusAccepted)
	if id := apiMust[json.Number](t, r.body, "data.id").String(); id != "1" || apiMust[string](t, r.body, "data.state") != "running" ||
		r.header.Get("Location") != "/v1/rules/rescrub/1" {
		t.Fatalf("the first re-scrub: %s (Location %q)", r, r.header.Get("Location"))
	}
	// Its start waits for the rules' poll interval on the service's clock,
	// which stands still: the job runs until the clock moves.
	e.startRescrub(t, apiAcmeTest, rangeBody).wantError(t, http.StatusConflict)
	e.clock.Advance(time.Minute)
	job := e.awaitRescrub(t, apiAcmeLive, 1)
	if job["state"] != "done" || job["changed"] != json.Number("2") || job["version"] != json.Number("1") || job["finished_at"] == nil {
		t.Fatalf("the re-scrub ended as %s, want done, 2 changed (acme's live and test messages) under version 1", apiShow(job))
	}

	for _, key := range []APIKey{apiAcmeLive, apiAcmeTest} {
		id := map[string]string{apiAcmeLive.Domain: live.ID, apiAcmeTest.Domain: test.ID}[key.Domain]
		r := e.get(t, key, "/v1/messages/"+id)
		r.wantOK(t, "", "data", "rules")
		if strings.Contains(string(r.raw), canary) {
			t.Errorf("%s: the re-scrubbed message still holds the canary: %s", key.Domain, r)
		}
		if by := apiMust[json.Number](t, r.body, "rules.rescrubbed_by").String(); by != "1" ||
			!strings.Contains(apiShow(apiMust[[]any](t, r.body, "rules.changes")), "query.token") {
			t.Errorf("%s: the rules record says %s, want rescrubbed_by 1 and the token's change", key.Domain, apiShow(r.body))
		}
		if found := e.listAll(t, key, url.Values{"q": {canary}}); len(found) != 0 {
			t.Errorf("%s: q=%s still finds %s", key.Domain, canary, apiShow(found))
		}
		if raw := e.export(t, key, nil).raw; strings.Contains(string(raw), canary) {
			t.Errorf("%s: the export still holds the canary", key.Domain)
		}
	}
	if got := apiMust[string](t, e.fetch(t, apiGlobexLive, globex.ID), "path"); !strings.Contains(got, canary) {
		t.Errorf("globex's message %q was scrubbed by acme's rules", got)
	}

	list := e.get(t, apiAcmeLive, "/v1/rules/rescrub")
	list.wantOK(t, "", "data")
	if n := len(apiMust[[]any](t, list.body, "data")); n != 1 {
		t.Errorf("the account lists %d re-scrubs, want 1: %s", n, list)
	}
	// Run again: everything is under version 1 already, nothing changes.
	e.startRescrub(t, apiAcmeLive, rangeBody).wantJSON(t, http.StatusAccepted)
	e.clock.Advance(time.Minute)
	if again := e.awaitRescrub(t, apiAcmeLive, 2); again["state"] != "done" || again["changed"] != json.Number("0") || again["skipped"] != json.Number("2") {
		t.Errorf("a second re-scrub of the same version ended as %s, want done, 0 changed, 2 skipped", apiShow(again))
	}
	e.get(t, apiAcmeLive, "/v1/rules/rescrub/3").wantError(t, http.StatusNotFound)
}

// A request retried under its Idempotency-Key after a new rule set, and again
// after a re-scrub rewrote what it stored, is the same request: answered with
// its identity, nothing stored twice, the stored message left as the rules
// made it; the key reused for another request is still refused.
func apiTestRetryAfterRulesChanged(t *testing.T, s apiSuite) {
	e := s.start(t)
	const canary = "c4nary-retry-31"
	item := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"path": "/v1/orders?token=" + canary,
		"request.body": `{"email":"` + canary + `"}`})
	first := e.ingestOne(t, apiAcmeLive, item, "Idempotency-Key", "order-retry-1")
	e.reveal(t, apiAcmeLive, first.ID)
	retry := func(when string) {
		t.Helper()
		if again := e.ingestOne(t, apiAcmeLive, item, "Idempotency-Key", "order-retry-1"); again != first {
			t.Errorf("the retry %s returned %v, want the first reply's %v", when, again, first)
		}
	}

	e.putRules(t, apiAcmeLive, `{"privacy": [{"id": "canaries", "select": ["body"], "match": {"pattern": "c4nary-[a-z]+-[0-9]+"}, "action": {"type": "mask"}}]}`,
		0, "mask canaries").wantOK(t, "", "data")
	e.clock.Advance(time.Minute) // past the rules' poll: the new set applies
	retry("under a new rule set")

	if _, ok := e.store.(ports.MessageRewriter); ok {
		from, to := apiRFC3339(e.clock.Now().Add(-time.Hour)), apiRFC3339(e.clock.Now().Add(time.Hour))
		e.startRescrub(t, apiAcmeLive, fmt.Sprintf(`{"from": %q, "to": %q}`, from, to)).wantJSON(t, http.StatusAccepted)
		e.clock.Advance(time.Minute)
		if job := e.awaitRescrub(t, apiAcmeLive, 1); job["state"] != "done" || job["changed"] != json.Number("1") {
			t.Fatalf("the re-scrub ended as %s, want done, 1 changed", apiShow(job))
		}
		if body := apiMust[string](t, e.fetch(t, apiAcmeLive, first.ID), "request.body"); strings.Contains(body, canary) {
			t.Fatalf("the re-scrub left the canary in %q", body)
		}
		retry("after a re-scrub rewrote the stored message")
		if body := apiMust[string](t, e.fetch(t, apiAcmeLive, first.ID), "request.body"); strings.Contains(body, canary) {
			t.Errorf("the retry after the re-scrub stored the canary again: %q", body)
		}
	}

	// A retention rule puts the retry in another class (SQLite: another day
	// file): it is still the one message, counted once.
	e.putRules(t, apiAcmeLive, `{"privacy": [{"id": "canaries", "select": ["body"], "match": {"pattern": "c4nary-[a-z]+-[0-9]+"}, "action": {"type": "mask"}}],
		"retention": [{"id": "shop-week", "scope": {"applications": ["shop"]}, "keep": "7d"}]}`, 1, "keep shop a week").wantOK(t, "", "data")
	e.clock.Advance(time.Minute)
	retry("under a retention rule")

	e.clock.Advance(time.Minute) // past the visibility delay of what the retry stored, if any
	from := apiRFC3339(e.clock.Now().Add(-time.Hour))
	if n := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {from}}), "total.count"); n != 1 {
		t.Errorf("the statistics count %d messages after the retries, want the one", n)
	}

	other := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"path": "/v1/orders/other"})
	e.awaitKeyReuseRefused(t, apiAcmeLive, other, "order-retry-1")
	e.wantStoredExactly(t, apiAcmeLive, first.ID)

	e.clock.Advance(time.Minute)
	counted := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {from}}), "total.count")
	// An ingest rule that now drops such requests: the retry is still the
	// request that stored the message, answered as stored (no "stored": false),
	// and no tally is counted beside it.
	e.putRules(t, apiAcmeLive, `{"privacy": [{"id": "canaries", "select": ["body"], "match": {"pattern": "c4nary-[a-z]+-[0-9]+"}, "action": {"type": "mask"}}],
		"retention": [{"id": "shop-week", "scope": {"applications": ["shop"]}, "keep": "7d"}],
		"ingest": [{"id": "drop-orders", "scope": {"paths": ["/v1/orders"]}, "action": "drop"}]}`, 2, "drop orders").wantOK(t, "", "data")
	e.clock.Advance(time.Minute)
	retry("under an ingest rule that drops it")
	e.fetch(t, apiAcmeLive, first.ID) // still stored
	e.clock.Advance(time.Minute)
	if n := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {from}}), "total.count"); n != counted {
		t.Errorf("the statistics count %d messages after the retry a rule drops, want the %d before it", n, counted)
	}
}

// A request an ingest rule dropped, retried under its Idempotency-Key after
// the rules changed to keep such requests, is answered as the first was:
// "stored": false with its identity, nothing stored, counted once.
func apiTestRetryOfDroppedAfterRulesChanged(t *testing.T, s apiSuite) {
	e := s.start(t)
	e.putRules(t, apiAcmeLive, `{"ingest": [{"id": "drop-carts", "scope": {"paths": ["/v1/carts"]}, "action": "drop"}]}`, 0, "drop carts").wantOK(t, "", "data")
	item := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"path": "/v1/carts"})
	submit := func(when string) apiIdentity {
		t.Helper()
		r := e.post(t, apiAcmeLive, item, "Idempotency-Key", "cart-dropped-1")
		r.wantOK(t, apiIngestedText, "data")
		apiWantKeys(t, r.body, "data", "id", "reference", "stored")
		if apiMust[bool](t, r.body, "data.stored") {
			t.Errorf("the request %s is answered as stored: %s", when, r)
		}
		return apiIdentity{ID: apiMust[string](t, r.body, "data.id"), Reference: apiMust[string](t, r.body, "data.reference")}
	}
	first := submit("an ingest rule drops")
	e.wantStoredExactly(t, apiAcmeLive)
	from := apiRFC3339(e.clock.Now().Add(-time.Hour))
	counted := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {from}}), "total.count")

	e.putRules(t, apiAcmeLive, `{"ingest": [{"id": "keep-carts", "scope": {"paths": ["/v1/carts"]}, "action": "keep"}]}`, 1, "keep carts").wantOK(t, "", "data")
	e.clock.Advance(time.Minute) // past the rules' poll: the new set applies
	if again := submit("retried under rules that keep it"); again != first {
		t.Errorf("the retry returned %v, want the first reply's %v", again, first)
	}
	// The key reused for another request: refused where the store kept the
	// first one's digest with its tally, else answered as the tally's
	// retry; never stored.
	other := apiItem(e.clock.Now().Add(-time.Minute), map[string]any{"path": "/v1/carts", "request.body": `{"cart":"other"}`})
	switch r := e.post(t, apiAcmeLive, other, "Idempotency-Key", "cart-dropped-1"); r.status {
	case http.StatusBadRequest:
		r.wantError(t, http.StatusBadRequest, "Idempotency-Key")
	default:
		r.wantOK(t, apiIngestedText, "data")
		if stored, _ := apiAt(r.body, "data.stored"); stored != false {
			t.Errorf("another request under the key of a dropped one is answered as stored: %s", r)
		}
	}
	e.clock.Advance(time.Minute) // past the visibility delay of what the retries stored, if any
	e.wantAbsent(t, apiAcmeLive, first.ID)
	e.wantStoredExactly(t, apiAcmeLive, apiListedIDs(e.listAll(t, apiAcmeLive, url.Values{"name": {"control"}}))...)
	if n := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {from}}), "total.count"); n != counted+1 { // the second control
		t.Errorf("the statistics count %d messages after the retry, want %d: the tally and the two controls", n, counted+1)
	}
}

package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

func apiTestVisibilityDelay(t *testing.T, s apiSuite) {
	e := s.start(t)
	delay := e.cfg.Policy.VisibilityDelay
	storedAt := e.clock.Now()
	late := e.ingestOne(t, apiAcmeLive, apiItem(storedAt.Add(-time.Minute), nil))
	// The control is stored a second earlier but written after late: once it is
	// listed, late has been written and is readable as far as the store goes.
	e.clock.Set(storedAt.Add(-time.Second))
	control := e.ingestOne(t, apiAcmeLive, apiItem(storedAt.Add(-time.Minute), nil))

	e.clock.Set(storedAt.Add(delay - time.Microsecond))
	if apiByID(e.awaitListed(t, apiAcmeLive, control.ID))[late.ID] != nil {
		t.Errorf("a message stored at %s is listed at %s, before its visibility delay of %s", storedAt, e.clock.Now(), delay)
	}
	e.wantAbsent(t, apiAcmeLive, late.ID)
	e.wantAbsent(t, apiAcmeLive, late.Reference)

	e.clock.Set(storedAt.Add(delay))
	e.awaitListed(t, apiAcmeLive, late.ID)
	e.fetch(t, apiAcmeLive, late.ID)
	e.fetch(t, apiAcmeLive, late.Reference)

	// Once visible, always visible until retention.
	e.clock.Advance(24 * time.Hour)
	e.awaitListed(t, apiAcmeLive, late.ID, control.ID)
	e.fetch(t, apiAcmeLive, late.ID)
}

func apiTestRetention(t *testing.T, s apiSuite) {
	e := s.start(t)
	retention := e.cfg.Policy.Retention
	now := e.clock.Now()

	r := e.post(t, apiAcmeLive, apiItem(now.Add(-retention-time.Second), nil))
	r.wantError(t, http.StatusBadRequest, "created_at")

	oldAt := domain.Micro(now.Add(-retention + time.Hour))
	old := e.ingestOne(t, apiAcmeLive, apiItem(oldAt, nil))
	fresh := e.ingestOne(t, apiAcmeLive, apiItem(now.Add(-time.Minute), nil))
	e.reveal(t, apiAcmeLive, old.ID, fresh.ID)

	expiry := oldAt.Add(retention)
	e.clock.Set(expiry.Add(-time.Microsecond))
	e.awaitListed(t, apiAcmeLive, old.ID, fresh.ID)
	e.fetch(t, apiAcmeLive, old.Reference)

	e.clock.Set(expiry.Add(time.Microsecond))
	if apiByID(e.awaitListed(t, apiAcmeLive, fresh.ID))[old.ID] != nil {
		t.Errorf("a message created at %s is still listed at %s, past the retention of %s", oldAt, e.clock.Now(), retention)
	}
	e.wantAbsent(t, apiAcmeLive, old.ID)
	e.wantAbsent(t, apiAcmeLive, old.Reference)
}

func apiTestScoping(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	keys := []APIKey{apiAcmeLive, apiAcmeTest, apiGlobexLive}
	owned := make([]apiIdentity, len(keys))
	for i, key := range keys {
		// The same name everywhere, so a name filter cannot hide a leak.
		owned[i] = e.ingestOne(t, key, apiItem(at, nil))
	}
	e.clock.Advance(e.cfg.Policy.VisibilityDelay)
	// Every scope's own message is the positive control for the others' absence.
	listings := make([][]map[string]any, len(keys))
	for i, key := range keys {
		listings[i] = e.awaitListed(t, key, owned[i].ID)
	}
	for i, key := range keys {
		listed := listings[i]
		if len(listed) != 1 {
			t.Errorf("%s:%s lists %s, want only its own message %s", key.Account, key.Domain, apiShow(listed), owned[i].ID)
		}
		if got := listed[0]["domain"]; got != key.Domain {
			t.Errorf("%s:%s's message has domain %v", key.Account, key.Domain, got)
		}
		for j, other := range owned {
			if j != i {
				e.wantAbsent(t, key, other.ID)
				e.wantAbsent(t, key, other.Reference)
			}
		}
	}
}

func apiTestAuthentication(t *testing.T, s apiSuite) {
	e := s.start(t)
	key := apiAcmeLive.Key
	body := apiBody(t, apiItem(e.clock.Now().Add(-time.Minute), nil))
	accepted := []struct{ name, value string }{
		{"Bearer", "Bearer " + key},
		{"lower-case bearer", "bearer " + key},
		{"bare key", key},
	}
	var ids []string
	for _, a := range accepted {
		r := e.do(t, http.MethodPost, "/v1/messages", body, "Authorization", a.value, "Content-Type", apiJSON)
		r.wantOK(t, apiIngestedText, "data")
		ids = append(ids, apiCheckIdentity(t, r, "data", true).ID)
	}
	e.reveal(t, apiAcmeLive, ids...)
	for _, a := range accepted {
		e.do(t, http.MethodGet, "/v1/messages", nil, "Authorization", a.value).wantOK(t, apiFetchedText, "messages", "pagination")
		e.do(t, http.MethodGet, "/v1/messages/"+ids[0], nil, "Authorization", a.value).wantOK(t, "", "data", "rules")
	}

	wrongKey := key[:len(key)-1] + string(key[len(key)-1]^1)
	rejected := []struct {
		name   string
		header []string
	}{
		{"no Authorization header", nil},
		{"empty value", []string{"Authorization", ""}},
		{"Bearer with nothing", []string{"Authorization", "Bearer "}},
		{"Bearer alone", []string{"Authorization", "Bearer"}},
		{"unknown key", []string{"Authorization", "Bearer nope"}},
		{"wrong key of the right format", []string{"Authorization", "Bearer " + wrongKey}},
		{"wrong bare key", []string{"Authorization", wrongKey}},
		{"key with a suffix", []string{"Authorization", "Bearer " + key + "x"}},
		{"key without its last character", []string{"Authorization", "Bearer " + key[:len(key)-1]}},
		{"Basic scheme", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"))}},
		{"key in X-Api-Key instead", []string{"X-Api-Key", key}},
	}
	for _, c := range rejected {
		t.Run(c.name, func(t *testing.T) {
			e.do(t, http.MethodPost, "/v1/messages", body, append(c.header, "Content-Type", apiJSON)...).wantError(t, http.StatusUnauthorized)
			e.do(t, http.MethodGet, "/v1/messages", nil, c.header...).wantError(t, http.StatusUnauthorized)
			e.do(t, http.MethodGet, "/v1/messages/"+ids[0], nil, c.header...).wantError(t, http.StatusUnauthorized)
		})
	}
	e.wantStoredExactly(t, apiAcmeLive, ids...)
}

func apiTestIdempotencyKey(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	batch := []any{apiItem(at, map[string]any{"name": "a"}), apiItem(at, map[string]any{"name": "b"})}
	firstAt := e.clock.Now()
	first := e.ingestBatch(t, apiAcmeLive, batch, 2, "Idempotency-Key", "order-42")

	e.clock.Advance(time.Second) // the retry comes later
	if retry := e.ingestBatch(t, apiAcmeLive, batch, 2, "Idempotency-Key", "order-42"); !slices.Equal(retry, first) {
		t.Errorf("a retry with the same Idempotency-Key returned %v, want the first reply's %v", retry, first)
	}
	single := e.ingestOne(t, apiAcmeLive, batch[0], "Idempotency-Key", "single-7")
	if again := e.ingestOne(t, apiAcmeLive, batch[0], "Idempotency-Key", "single-7"); again != single {
		t.Errorf("a retried single submission returned %v, want %v", again, single)
	}

	// A different key, or the same key in another scope, is a different request.
	other := e.ingestBatch(t, apiAcmeLive, batch, 2, "Idempotency-Key", "order-43")
	elsewhere := append(e.ingestBatch(t, apiAcmeTest, batch, 2, "Idempotency-Key", "order-42"),
		e.ingestBatch(t, apiGlobexLive, batch, 2, "Idempotency-Key", "order-42")...)
	apiWantUnique(t, slices.Concat(first, other, []apiIdentity{single}, elsewhere))

	// The same key with other submissions cannot be a retry of the first request.
	reused := []any{batch[0], apiItem(at, map[string]any{"name": "b-changed"})}
	e.awaitKeyReuseRefused(t, apiAcmeLive, reused, "order-42")

	e.wantStoredExactly(t, apiAcmeLive, apiIDs(slices.Concat(first, other, []apiIdentity{single}))...)
	if got := e.fetch(t, apiAcmeLive, first[0].ID)["updated_at"]; got != apiWire(firstAt) {
		t.Errorf("after a retry updated_at is %v, want the first submission's %s: a retry must not rewrite", got, apiWire(firstAt))
	}
	if got := e.fetch(t, apiAcmeLive, first[1].ID)["name"]; got != "b" {
		t.Errorf("after a reused key the first request's item is named %v, want %q", got, "b")
	}
}

// awaitKeyReuseRefused posts body under an Idempotency-Key that already stored
// other submissions until it is refused with 400 naming the key. A store with
// read lag may not see the earlier request at once: until then the ids exist, so
// each attempt stores nothing new either.
func (e *apiEnv) awaitKeyReuseRefused(t *testing.T, key APIKey, body any, idempotencyKey string) {
	t.Helper()
	e.poll(t, func() (bool, string) {
		r := e.post(t, key, body, "Idempotency-Key", idempotencyKey)
		switch r.status {
		case http.StatusBadRequest:
			r.wantError(t, http.StatusBadRequest, "Idempotency-Key")
			return true, ""
		case http.StatusOK:
			return false, fmt.Sprintf("reusing an Idempotency-Key for other submissions was never refused: %s", r)
		}
		t.Fatalf("reusing an Idempotency-Key for other submissions: %s, want 400", r)
		return true, ""
	})
}

// errAPIDown is what a store whose backend is down returns.
var errAPIDown = fmt.Errorf("conformance: backend down: %w", ports.ErrUnavailable)

// apiFlakyStore fails on demand like a store whose backend is unreachable.
type apiFlakyStore struct {
	ports.MessageStore
	down     atomic.Bool  // every read and write fails
	lostAcks atomic.Int32 // the next n Appends write, then fail: a timeout after the write
}

func (s *apiFlakyStore) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if s.down.Load() {
		return nil, errAPIDown
	}
	return s.MessageStore.Lookup(ctx, scope, ids)
}

func (s *apiFlakyStore) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	if s.down.Load() {
		return nil, errAPIDown
	}
	tl, ok := s.MessageStore.(ports.TallyLookup)
	if !ok {
		return nil, nil
	}
	return tl.LookupTallies(ctx, scope, ids)
}

func (s *apiFlakyStore) Append(ctx context.Context, msgs []domain.Message) error {
	if s.down.Load() {
		return errAPIDown
	}
	if n := s.lostAcks.Load(); n > 0 && s.lostAcks.CompareAndSwap(n, n-1) {
		if err := s.MessageStore.Append(ctx, msgs); err != nil {
			return err
		}
		return errAPIDown
	}
	return s.MessageStore.Append(ctx, msgs)
}

func (s *apiFlakyStore) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if s.down.Load() {
		return domain.Page{}, errAPIDown
	}
	return s.MessageStore.List(ctx, q, now)
}

func (s *apiFlakyStore) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	if s.down.Load() {
		return domain.Message{}, errAPIDown
	}
	return s.MessageStore.Get(ctx, scope, idOrReference, now)
}

func (s *apiFlakyStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	if s.down.Load() {
		return stats.Stats{}, errAPIDown
	}
	return s.MessageStore.Stats(ctx, q, now)
}

func apiTestStoreUnavailable(t *testing.T, s apiSuite) {
	flaky := &apiFlakyStore{}
	e := s.startWrapped(t, func(store ports.MessageStore) ports.MessageStore {
		flaky.MessageStore = store
		return flaky
	})
	batch := []any{apiItem(e.clock.Now().Add(-time.Minute), nil), apiItem(e.clock.Now().Add(-time.Minute), nil)}

	flaky.down.Store(true)
	for _, r := range []apiReply{
		e.post(t, apiAcmeLive, batch),
		e.get(t, apiAcmeLive, "/v1/messages"),
		e.get(t, apiAcmeLive, "/v1/messages/msg_AAAAAAAAAAAA"),
		e.get(t, apiAcmeLive, "/v1/stats"),
		e.get(t, apiAcmeLive, "/v1/messages/export"),
		e.get(t, apiAcmeLive, "/v1/messages/export?format=csv"),
	} {
		r.wantError(t, http.StatusServiceUnavailable)
		apiWantRetryAfter(t, r)
	}
	flaky.down.Store(false)

	// The write succeeded but its acknowledgement was lost; the client retries
	// with the same Idempotency-Key and nothing is stored twice.
	flaky.lostAcks.Store(1)
	r := e.post(t, apiAcmeLive, batch, "Idempotency-Key", "retry-1")
	r.wantError(t, http.StatusServiceUnavailable)
	apiWantRetryAfter(t, r)
	first := e.ingestBatch(t, apiAcmeLive, batch, 2, "Idempotency-Key", "retry-1")
	if again := e.ingestBatch(t, apiAcmeLive, batch, 2, "Idempotency-Key", "retry-1"); !slices.Equal(again, first) {
		t.Errorf("retries returned %v, then %v", first, again)
	}
	e.wantStoredExactly(t, apiAcmeLive, apiIDs(first)...)
}

// apiWantRetryAfter requires a Retry-After of delay-seconds or an HTTP date.
func apiWantRetryAfter(t *testing.T, r apiReply) {
	t.Helper()
	value := r.header.Get("Retry-After")
	if seconds, err := strconv.Atoi(value); err == nil && seconds >= 0 {
		return
	}
	if _, err := http.ParseTime(value); err != nil {
		t.Errorf("Retry-After is %q, want seconds or an HTTP date: %s", value, r)
	}
}

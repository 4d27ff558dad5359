package app_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func newIngester(store ports.MessageStore) *app.Ingester {
	return app.NewIngester(store, app.DefaultConfig().Policy(), fixedClock{testNow})
}

func TestSubmitSingleStoresNormalisedMessage(t *testing.T) {
	store := &recordingStore{}
	res, err := newIngester(store).Submit(context.Background(), acmeLive, draftsOf(submitted), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Multiple || len(res.Identities) != 1 || len(store.appended) != 1 {
		t.Fatalf("result %+v with %d stored, want one identity of a single submission", res, len(store.appended))
	}
	m := store.appended[0]
	if m.Identity() != res.Identities[0] {
		t.Errorf("stored identity %+v, returned %+v", m.Identity(), res.Identities[0])
	}
	if m.Scope() != acmeLive.Scope || m.Method != "GET" || !m.UpdatedAt.Equal(testNow) {
		t.Errorf("stored %+v: want scope of the principal, method GET, updated_at %s", m, testNow)
	}
	if got := m.Request.Header["Authorization"]; len(got) != 1 || got[0] != domain.Mask {
		t.Errorf("Authorization stored as %q, want it masked", got)
	}
	if m.Response.ContentType != "application/json" || !m.VisibleAt.Equal(testNow.Add(domain.DefaultVisibilityDelay)) {
		t.Errorf("content type %q, visible at %s", m.Response.ContentType, m.VisibleAt)
	}
}

// The HTTP API decodes each body into drafts that point into the body's buffer,
// which it reuses once Decode returns, so the messages must not share it.
func TestDecodeKeepsNothingOfTheDrafts(t *testing.T) {
	varied := strings.NewReplacer("/orders", "/caf\\u00e9", `{"name"`, `{"ip_address":"203.0.113.9","name"`,
		`"Bearer secret"`, `"Bearer secret","x-n":5,"x-a":["a","b\\u00e9"]`).Replace(submitted)
	body := `{"messages":[` + submitted + "," + varied + "]}"
	reused := []byte(body)
	kept, fresh := &recordingStore{}, &recordingStore{}
	key, err := app.ParseIdempotencyKey("k")
	if err != nil {
		t.Fatal(err)
	}
	admitted, err := newIngester(kept).Admit(acmeLive, key, int64(len(reused)))
	if err != nil {
		t.Fatal(err)
	}
	if err := admitted.Decode(context.Background(), int64(len(reused)), func() (domain.Drafts, error) {
		return httpapi.DecodeSubmissions(reused, domain.DefaultMaxBatch)
	}); err != nil {
		t.Fatal(err)
	}
	for i := range reused {
		reused[i] = 'x'
	}
	if _, err := admitted.Store(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := newIngester(fresh).Submit(context.Background(), acmeLive, draftsOf(body), "k"); err != nil {
		t.Fatal(err)
	}
	if len(fresh.appended) != 2 || fresh.appended[1].IPAddress != "203.0.113.9" || len(fresh.appended[1].Request.Header["X-A"]) != 2 {
		t.Fatalf("the second submission was not decoded as written: %+v", fresh.appended)
	}
	if !reflect.DeepEqual(kept.appended, fresh.appended) {
		t.Errorf("overwriting the body after Decode changed what was stored:\n%+v\nwant\n%+v", kept.appended, fresh.appended)
	}
}

// A caller that recovers a panic in decoding (here the policy's sniffer) must not
// be left with the submission still counted: with one decoder and no waiting
// room, the next submission would be refused for load.
func TestSubmitReleasesAfterAPanic(t *testing.T) {
	policy := app.DefaultConfig().Policy()
	policy.Sniff = func([]byte) string { panic("sniffer") }
	in := app.NewIngester(&recordingStore{}, policy, fixedClock{testNow}).LimitDecoding(app.AdmissionOptions{Decoders: 1})
	plainText := strings.Replace(submitted, `"body":"{}"`, `"body":"plain text"`, 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the sniffer did not panic")
			}
		}()
		_, _ = in.Submit(context.Background(), acmeLive, draftsOf(plainText), "")
	}()
	if _, err := in.Submit(context.Background(), acmeLive, draftsOf(submitted), ""); err != nil {
		t.Fatalf("after a recovered panic: %v", err)
	}
}

func TestSubmitBatchKeepsInputOrder(t *testing.T) {
	store := &recordingStore{}
	body := "[" + strings.Repeat(submitted+",", 2) + strings.Replace(submitted, "/orders", "/third", 1) + "]"
	res, err := newIngester(store).Submit(context.Background(), acmeLive, draftsOf(body), "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Multiple || len(res.Identities) != 3 || len(store.appended) != 3 {
		t.Fatalf("result %+v, %d stored; want 3 identities of a batch", res, len(store.appended))
	}
	for i, m := range store.appended {
		if m.Identity() != res.Identities[i] {
			t.Errorf("item %d: stored %+v, returned %+v", i, m.Identity(), res.Identities[i])
		}
	}
	if store.appended[2].Path != "/third" || res.Identities[0] == res.Identities[1] {
		t.Errorf("identities %+v, last path %q", res.Identities, store.appended[2].Path)
	}
}

func TestSubmitWithIdempotencyKeyDerivesIdentities(t *testing.T) {
	store := &recordingStore{}
	in := newIngester(store)
	body := draftsOf("[" + submitted + "," + submitted + "]")
	first, err := in.Submit(context.Background(), acmeLive, body, "retry-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := in.Submit(context.Background(), acmeLive, body, "retry-1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range first.Identities {
		if want := domain.DerivedIdentity(acmeLive.Scope, "retry-1", i); first.Identities[i] != want || again.Identities[i] != want {
			t.Errorf("item %d: got %+v then %+v, want %+v", i, first.Identities[i], again.Identities[i], want)
		}
	}
	other := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainTest}}
	res, err := in.Submit(context.Background(), other, body, "retry-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Identities[0] == first.Identities[0] {
		t.Error("the same Idempotency-Key in another scope gave the same id")
	}
}

// A key already used for other submissions cannot carry a retry: the request is
// refused before anything is written, whether the store is given directly or
// written to and looked up in as two collaborators. A retry of what is stored
// writes nothing again.
func TestSubmitRefusesAReusedIdempotencyKey(t *testing.T) {
	for name, wire := range map[string]func(*recordingStore) *app.Ingester{
		"store that looks up": func(s *recordingStore) *app.Ingester { return newIngester(s) },
		"lookup set separately": func(s *recordingStore) *app.Ingester {
			in, err := app.NewIngesterWith(app.IngestPorts{Store: writerOnly{s}, Lookup: s, Clock: fixedClock{testNow}},
				app.DefaultConfig().Policy(), app.DefaultAdmissionOptions())
			if err != nil {
				t.Fatal(err)
			}
			return in
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := &recordingStore{}
			in := wire(store)
			if _, err := in.Submit(context.Background(), acmeLive, draftsOf(submitted), "order-1"); err != nil {
				t.Fatal(err)
			}
			if _, err := in.Submit(context.Background(), acmeLive, draftsOf(submitted), "order-1"); err != nil {
				t.Fatalf("a retry: %v", err)
			}
			changed := strings.Replace(submitted, `"path":"/orders"`, `"path":"/orders/2"`, 1)
			_, err := in.Submit(context.Background(), acmeLive, draftsOf(changed), "order-1")
			if !errors.Is(err, ports.ErrConflict) {
				t.Errorf("other submissions under a used key: %v, want ErrConflict", err)
			}
			if n := len(store.appended); n != 1 {
				t.Errorf("the store was asked to append %d messages, want 1 (the request; its retry finds it stored)", n)
			}
		})
	}
}

// writerOnly hides every method of a store but Append.
type writerOnly struct{ ports.MessageWriter }

// A queue that does not stamp would store messages without their stored and
// visible times, which are set once, when written: refused at start-up.
func TestIngesterNeedsAStampingQueue(t *testing.T) {
	g := app.NewGroupCommitter(&recordingStore{}, app.GroupCommitOptions{})
	_, err := app.NewIngesterWith(app.IngestPorts{Queue: g, Lookup: &recordingStore{}, Clock: fixedClock{testNow}},
		app.DefaultConfig().Policy(), app.DefaultAdmissionOptions())
	if err == nil {
		t.Error("an ingester on a queue without a stamper was built")
	}
}

// Without a lookup a reused Idempotency-Key would go unchecked: refused at start-up.
func TestIngesterNeedsALookup(t *testing.T) {
	_, err := app.NewIngesterWith(app.IngestPorts{Store: &recordingStore{}, Clock: fixedClock{testNow}},
		app.DefaultConfig().Policy(), app.DefaultAdmissionOptions())
	if err == nil {
		t.Error("an ingester without a ports.MessageLookup was built")
	}
}

func TestSubmitRefusals(t *testing.T) {
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(submitted+",", domain.DefaultMaxBatch+1), ",") + "]"
	for _, tc := range []struct {
		name      string
		principal domain.Principal
		body      string
		key       string
		storeErr  error
		check     func(error) bool
	}{
		{"read-only", domain.Principal{Scope: acmeLive.Scope, ReadOnly: true}, submitted, "", nil,
			func(err error) bool { return errors.Is(err, ports.ErrForbidden) }},
		{"invalid body", acmeLive, `{"name":"x"}`, "", nil, isValidation("created_at")},
		{"invalid item of a batch", acmeLive, "[" + submitted + `,{"name":1}]`, "", nil, isValidation("[1].name")},
		{"batch too large", acmeLive, tooMany, "", nil,
			func(err error) bool { return errors.Is(err, domain.ErrTooLarge) }},
		{"idempotency key with a space", acmeLive, submitted, "a b", nil, isValidation("Idempotency-Key")},
		{"idempotency key too long", acmeLive, submitted, strings.Repeat("k", 256), nil, isValidation("Idempotency-Key")},
		{"store unavailable", acmeLive, submitted, "", fmt.Errorf("dial: %w", ports.ErrUnavailable),
			func(err error) bool { return errors.Is(err, ports.ErrUnavailable) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &recordingStore{err: tc.storeErr}
			res, err := newIngester(store).Submit(context.Background(), tc.principal, draftsOf(tc.body), tc.key)
			if !tc.check(err) {
				t.Fatalf("Submit = %+v, %v: not the expected error", res, err)
			}
			if len(store.appended) != 0 || len(res.Identities) != 0 {
				t.Errorf("%d messages stored, %d identities returned on error", len(store.appended), len(res.Identities))
			}
		})
	}
}

func isValidation(field string) func(error) bool {
	return func(err error) bool {
		var v *domain.ValidationError
		if !errors.As(err, &v) {
			return false
		}
		for _, f := range v.Fields {
			if f.Field == field {
				return true
			}
		}
		return false
	}
}

func TestValidateIdempotencyKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"k": true, strings.Repeat("x", 255): true, "a-b_c.d~!": true,
		"": false, strings.Repeat("x", 256): false, "a b": false, "tab\t": false, "é": false,
	} {
		if err := app.ValidateIdempotencyKey(key); (err == nil) != ok {
			t.Errorf("ValidateIdempotencyKey(%q) = %v, want ok=%v", key, err, ok)
		}
	}
}

// The header's values are checked once, here: none is no key, two are invalid.
func TestParseIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string
		ok     bool
	}{
		{nil, "", true},
		{[]string{"order-1"}, "order-1", true},
		{[]string{""}, "", false},
		{[]string{"has space"}, "", false},
		{[]string{"a", "b"}, "", false},
	} {
		key, err := app.ParseIdempotencyKey(tc.values...)
		var invalid *domain.ValidationError
		if (err == nil) != tc.ok || key.String() != tc.want || (err != nil && !errors.As(err, &invalid)) {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want %q, ok=%v", tc.values, key, err, tc.want, tc.ok)
		}
	}
}

// Without a queue a message is stamped once, when written: its stored time and
// visible time are those of Store, not of Decode.
func TestSubmissionIsStampedWhenWritten(t *testing.T) {
	store := &recordingStore{}
	clock := conformance.NewFakeClock(testNow)
	policy := app.DefaultConfig().Policy()
	in := app.NewIngester(store, policy, clock)
	admitted, err := in.Admit(acmeLive, app.IdempotencyKey{}, int64(len(submitted)))
	if err != nil {
		t.Fatal(err)
	}
	if err := admitted.Decode(context.Background(), int64(len(submitted)), func() (domain.Drafts, error) {
		return draftsOf(submitted), nil
	}); err != nil {
		t.Fatal(err)
	}
	written := testNow.Add(time.Minute)
	clock.Set(written)
	if _, err := admitted.Store(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := store.appended[0]
	if !m.UpdatedAt.Equal(written) || !m.VisibleAt.Equal(written.Add(policy.VisibilityDelay)) {
		t.Errorf("stored with updated_at %v and visible from %v, want %v and %v (the write's time)",
			m.UpdatedAt, m.VisibleAt, written, written.Add(policy.VisibilityDelay))
	}
}

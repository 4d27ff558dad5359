package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func exchange(path string) domain.Exchange {
	return domain.Exchange{
		Name: "shop", CreatedAt: testNow, IPAddress: "192.0.2.7", Method: "get", Path: path,
		Request:  domain.ExchangeRequest{Header: map[string][]string{"authorization": {"Bearer secret"}}},
		Response: domain.ExchangeResponse{StatusCode: 200, Body: "{}"},
	}
}

func TestLocalSubmitterStoresThroughTheIngester(t *testing.T) {
	store := &recordingStore{}
	sub := app.LocalSubmitter{Ingester: newIngester(store), Principal: acmeLive}
	ids, err := sub.SubmitExchanges(context.Background(), []domain.Exchange{exchange("/a"), exchange("/b?x=1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || len(store.appended) != 2 {
		t.Fatalf("%d identities, %d stored; want 2 and 2", len(ids), len(store.appended))
	}
	for i, m := range store.appended {
		if m.Identity() != ids[i] || m.Scope() != acmeLive.Scope {
			t.Errorf("item %d: stored %+v in %+v, returned %+v", i, m.Identity(), m.Scope(), ids[i])
		}
	}
	m := store.appended[1]
	if m.Path != "/b?x=1" || m.Method != "GET" || m.IPAddress != "192.0.2.7" || !m.CreatedAt.Equal(testNow) {
		t.Errorf("stored %+v", m)
	}
	if got := m.Request.Header["Authorization"]; len(got) != 1 || got[0] != domain.Mask {
		t.Errorf("Authorization stored as %q, want it masked by the domain", got)
	}
}

func TestLocalSubmitterIsAllOrNothing(t *testing.T) {
	store := &recordingStore{}
	sub := app.LocalSubmitter{Ingester: newIngester(store), Principal: acmeLive}
	bad := exchange("no-slash")
	_, err := sub.SubmitExchanges(context.Background(), []domain.Exchange{exchange("/a"), bad})
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want a *domain.ValidationError", err)
	}
	if items := domain.InvalidItems(invalid, 2); len(items) != 1 || items[0] != 1 {
		t.Errorf("invalid items %v (%v), want [1]", items, err)
	}
	if len(store.appended) != 0 {
		t.Errorf("%d messages stored from a rejected batch", len(store.appended))
	}
}

func TestLocalSubmitterErrors(t *testing.T) {
	store := &recordingStore{err: ports.ErrUnavailable}
	sub := app.LocalSubmitter{Ingester: newIngester(store), Principal: acmeLive}
	if _, err := sub.SubmitExchanges(context.Background(), []domain.Exchange{exchange("/a")}); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("store down: err = %v, want ErrUnavailable", err)
	}
	ids, err := sub.SubmitExchanges(context.Background(), nil)
	if err != nil || ids != nil {
		t.Errorf("empty batch: %v, %v; want nothing", ids, err)
	}
	policy := app.DefaultConfig().Policy()
	policy.MaxBatch = 1
	small := app.LocalSubmitter{Ingester: app.NewIngester(&recordingStore{}, policy, fixedClock{testNow}), Principal: acmeLive}
	if _, err := small.SubmitExchanges(context.Background(), []domain.Exchange{exchange("/a"), exchange("/b")}); !errors.Is(err, domain.ErrTooLarge) {
		t.Errorf("over the batch limit: err = %v, want domain.ErrTooLarge", err)
	}
}

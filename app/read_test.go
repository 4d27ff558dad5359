package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func newReader(store *recordingStore, retention time.Duration) *app.Reader {
	cfg := app.DefaultConfig()
	cfg.Retention = retention
	return app.NewReader(store, cfg.Policy(), fixedClock{testNow})
}

func TestListScopesAndClampsTheQuery(t *testing.T) {
	retention := 24 * time.Hour
	oldest := testNow.Add(-retention + time.Microsecond)
	store := &recordingStore{}
	reader := newReader(store, retention)
	portal := domain.Principal{Scope: acmeLive.Scope, Name: "shop"}
	for _, tc := range []struct {
		name      string
		principal domain.Principal
		query     domain.Query
		want      domain.Query
	}{
		{"scope from the principal, defaults", acmeLive,
			domain.Query{Scope: domain.Scope{Account: "other", Domain: "test"}},
			domain.Query{Scope: acmeLive.Scope, Limit: domain.DefaultLimit, Filter: domain.Filter{From: oldest}}},
		{"from older than retention is raised", acmeLive,
			domain.Query{Limit: 5, Filter: domain.Filter{From: testNow.Add(-48 * time.Hour), Method: "GET"}},
			domain.Query{Scope: acmeLive.Scope, Limit: 5, Filter: domain.Filter{From: oldest, Method: "GET"}}},
		{"recent from is kept, oversize limit clamped", acmeLive,
			domain.Query{Limit: 1000, Filter: domain.Filter{From: testNow.Add(-time.Hour)}},
			domain.Query{Scope: acmeLive.Scope, Limit: domain.MaxLimit, Filter: domain.Filter{From: testNow.Add(-time.Hour)}}},
		{"application principal forces its name", portal,
			domain.Query{Limit: 10},
			domain.Query{Scope: acmeLive.Scope, Limit: 10, Filter: domain.Filter{Name: "shop", From: oldest}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.queries = nil
			if _, err := reader.List(context.Background(), tc.principal, tc.query); err != nil {
				t.Fatal(err)
			}
			if len(store.queries) != 1 {
				t.Fatalf("%d store queries, want 1", len(store.queries))
			}
			if got := store.queries[0]; got.Scope != tc.want.Scope || got.Limit != tc.want.Limit || got.Filter != tc.want.Filter {
				t.Errorf("store got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestListEmptyWithoutAskingTheStore(t *testing.T) {
	store := &recordingStore{}
	reader := newReader(store, 24*time.Hour)
	for name, tc := range map[string]struct {
		principal domain.Principal
		query     domain.Query
	}{
		"another application":  {domain.Principal{Scope: acmeLive.Scope, Name: "shop"}, domain.Query{Filter: domain.Filter{Name: "billing"}}},
		"range wholly expired": {acmeLive, domain.Query{Filter: domain.Filter{To: testNow.Add(-48 * time.Hour)}}},
	} {
		page, err := reader.List(context.Background(), tc.principal, tc.query)
		if err != nil || page.Messages == nil || len(page.Messages) != 0 || page.HasMore {
			t.Errorf("%s: %+v, %v; want an empty page", name, page, err)
		}
	}
	if len(store.queries) != 0 {
		t.Errorf("the store was asked %d times", len(store.queries))
	}
}

func TestListPassesStoreErrors(t *testing.T) {
	store := &recordingStore{err: ports.ErrUnavailable}
	if _, err := newReader(store, time.Hour).List(context.Background(), acmeLive, domain.Query{}); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("List = %v, want ErrUnavailable", err)
	}
}

func TestGet(t *testing.T) {
	const id = "0190a0a0-0000-7000-8000-000000000001"
	stored := domain.Message{ID: id, Reference: "msg_abcdefABCDEF", Name: "shop", CreatedAt: testNow.Add(-time.Hour)}
	for _, tc := range []struct {
		name      string
		principal domain.Principal
		key       string
		message   domain.Message
		storeErr  error
		wantAsked string // "" when the store must not be asked
		wantErr   error
	}{
		{"by id", acmeLive, id, stored, nil, id, nil},
		{"by upper-case id", acmeLive, strings.ToUpper(id), stored, nil, id, nil},
		{"by reference", acmeLive, "msg_abcdefABCDEF", stored, nil, "msg_abcdefABCDEF", nil},
		{"not an id or reference", acmeLive, "../etc", stored, nil, "", ports.ErrNotFound},
		{"store says not found", acmeLive, id, domain.Message{}, ports.ErrNotFound, id, ports.ErrNotFound},
		{"store unavailable", acmeLive, id, domain.Message{}, ports.ErrUnavailable, id, ports.ErrUnavailable},
		{"expired under the current retention", acmeLive, id,
			domain.Message{ID: id, CreatedAt: testNow.Add(-3 * time.Hour)}, nil, id, ports.ErrNotFound},
		{"another application", domain.Principal{Scope: acmeLive.Scope, Name: "billing"}, id, stored, nil, id, ports.ErrNotFound},
		{"its application", domain.Principal{Scope: acmeLive.Scope, Name: "shop"}, id, stored, nil, id, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &recordingStore{message: tc.message, err: tc.storeErr}
			m, err := newReader(store, 2*time.Hour).Get(context.Background(), tc.principal, tc.key)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Get = %+v, %v; want %v", m, err, tc.wantErr)
				}
			} else if err != nil || m.ID != id {
				t.Fatalf("Get = %+v, %v; want the message", m, err)
			}
			switch {
			case tc.wantAsked == "" && len(store.gets) != 0:
				t.Errorf("store asked for %q", store.gets)
			case tc.wantAsked != "" && (len(store.gets) != 1 || store.gets[0] != tc.wantAsked):
				t.Errorf("store asked for %q, want %q", store.gets, tc.wantAsked)
			}
		})
	}
}

package httpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/domain"
)

func TestCreatePortalSession(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	ctx := context.Background()
	c := newClient(t, svc.URL)
	submitN(t, c, 4) // shop and billing, alternately

	before := time.Now().Truncate(time.Second)
	session, err := c.CreatePortalSession(ctx, "shop", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if session.URL != svc.URL+"/portal#token="+session.Token {
		t.Errorf("URL %q for token %q", session.URL, session.Token)
	}
	if exp := session.ExpiresAt; exp.Before(before.Add(10*time.Minute)) || exp.After(after.Add(10*time.Minute)) {
		t.Errorf("ExpiresAt %s, want 10 minutes after %s", exp, before)
	}

	reader, err := httpclient.New(svc.URL, session.Token, fastRetries)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for m, err := range reader.All(ctx, httpclient.ListOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}
	if len(names) != 2 || names[0] != "shop" || names[1] != "shop" {
		t.Errorf("the session lists applications %v, want shop twice", names)
	}

	_, err = reader.CreatePortalSession(ctx, "shop", 0)
	var apiErr *httpclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Errorf("a session creating a session: %v, want a 403 APIError", err)
	}
	_, err = c.CreatePortalSession(ctx, "shop", 30*time.Second)
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != "expires_in" {
		t.Errorf("30 s: %v, want a ValidationError on expires_in", err)
	}
	session, err = c.CreatePortalSession(ctx, "shop", 0)
	if err != nil || session.ExpiresAt.Before(before.Add(time.Hour)) {
		t.Errorf("the default lifetime: %+v, %v; want an hour", session, err)
	}
}

// An empty application asks for a session on the whole account: the request
// carries no name at all, which the contract distinguishes from an empty one.
func TestCreatePortalSessionForTheWholeAccount(t *testing.T) {
	bodies := make(chan map[string]any, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		bodies <- body
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":true,"message":"ok","data":{"token":"t","url":"u","expires_at":"2026-11-24T07:00:00.000000Z"}}`)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	for application, want := range map[string]string{"": `{}`, "shop": `{"name":"shop"}`} {
		if _, err := c.CreatePortalSession(context.Background(), application, 0); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(<-bodies)
		if string(got) != want {
			t.Errorf("application %q sent %s, want %s", application, got, want)
		}
	}
}

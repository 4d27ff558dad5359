package capture_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// A server wrapped by the middleware, submitting through the HTTP client to a real
// reqlog service: its exchanges are listed back with the right fields.
func TestEndToEndThroughTheHTTPClient(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	client, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session="+secret)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET /healthz", okHandler)
	opts := capture.Options{
		Name: func(r *http.Request) string { return r.Header.Get("X-Customer") },
		Skip: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	}
	rec, app := startRecorder(t, client, opts, mux)

	before := time.Now().UTC().Truncate(time.Microsecond)
	for _, customer := range []string{"alpha", "beta", "alpha"} {
		req, _ := http.NewRequest(http.MethodPost, app.URL+"/orders?source=test", strings.NewReader(`{"item":"`+customer+`"}`))
		req.Header.Set("X-Customer", customer)
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		if resp, _ := send(t, req); resp.StatusCode != http.StatusCreated {
			t.Fatalf("app replied %d", resp.StatusCode)
		}
	}
	get(t, app.URL+"/missing")
	get(t, app.URL+"/healthz")
	conformance.WaitFor(t, "four exchanges", func() bool { return rec.Stats().Captured == 4 })
	after := time.Now().UTC()
	if s := closeRecorder(t, rec); s.Submitted != 4 {
		t.Fatalf("stats %+v, want 4 submitted", s)
	}

	page, err := client.List(context.Background(), httpclient.ListOptions{Name: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 2 {
		t.Fatalf("%d messages of alpha, want 2", len(page.Messages))
	}
	m := page.Messages[0]
	if m.Method != "POST" || m.Path != "/orders?source=test" || m.StatusCode != 201 || m.IPAddress != "127.0.0.1" || m.Domain != domain.DomainLive {
		t.Errorf("message %+v", m)
	}
	if m.Request.Body != `{"item":"alpha"}` || m.Response.Body != `{"item":"alpha"}` || m.Response.ContentType != "application/json" {
		t.Errorf("bodies %+v / %+v", m.Request, m.Response)
	}
	if m.Request.Header.Get("Authorization") != domain.Mask || m.Response.Header.Get("Set-Cookie") != domain.Mask || m.Request.Header.Get("X-Customer") != "alpha" {
		t.Errorf("headers %v / %v", m.Request.Header, m.Response.Header)
	}
	if m.CreatedAt.Before(before) || m.CreatedAt.After(after) {
		t.Errorf("created_at %v outside the requests' time [%v, %v]", m.CreatedAt, before, after)
	}

	missing, err := client.List(context.Background(), httpclient.ListOptions{StatusCode: "404"})
	if err != nil || len(missing.Messages) != 1 || missing.Messages[0].Name != capture.DefaultName || missing.Messages[0].Method != "GET" {
		t.Errorf("404s: %+v, %v", missing, err)
	}
	if all, _ := client.List(context.Background(), httpclient.ListOptions{PathPrefix: "/healthz"}); len(all.Messages) != 0 {
		t.Errorf("a skipped route was stored")
	}
}

// The measured duration reaches the service and comes back to the microsecond,
// and with it the sizes of both bodies.
func TestDurationEndToEnd(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	client, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now().Add(-time.Minute)}
	p := newPauser()
	rec, app := startRecorder(t, client, capture.Options{Clock: clock}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		p.pause()
		_, _ = io.WriteString(w, "slow answer")
	}))
	replied := make(chan error, 1)
	go func() {
		resp, err := http.Post(app.URL+"/report", "text/plain", strings.NewReader("twelve bytes"))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		replied <- err
	}()
	p.drive(t, clock, []time.Duration{1234567891 * time.Nanosecond})
	if err := <-replied; err != nil {
		t.Fatal(err)
	}
	conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
	if s := closeRecorder(t, rec); s.Submitted != 1 {
		t.Fatalf("stats %+v, want one submitted", s)
	}
	page, err := client.List(context.Background(), httpclient.ListOptions{Path: "/report"})
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("listed %+v, %v", page, err)
	}
	m := page.Messages[0]
	if !m.HasDuration || m.Duration != 1234567*time.Microsecond {
		t.Errorf("duration %v (known %t), want 1234.567ms", m.Duration, m.HasDuration)
	}
	if m.Request.Size != len("twelve bytes") || m.Response.Size != len("slow answer") {
		t.Errorf("sizes %d / %d", m.Request.Size, m.Response.Size)
	}
}

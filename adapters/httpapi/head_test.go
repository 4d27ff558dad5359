package httpapi_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
)

// HEAD gets the status and headers GET gets, and no body, on every GET route
// (RFC 9110 §9.3.2): load balancers health-check with HEAD. It runs on a real
// server, which is what drops the body.
func TestHeadAnswersLikeGet(t *testing.T) {
	srv, clock := portalServer(t)
	resp, raw := callAPI(t, http.MethodPost, srv.URL+"/v1/messages", liveKey, submission(start.Add(-time.Minute)))
	var stored struct{ Data struct{ ID string } }
	if err := json.Unmarshal(raw, &stored); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("submit: %d %s", resp.StatusCode, raw)
	}
	clock.Advance(app.DefaultConfig().VisibilityDelay)

	do := func(method, target string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+liveKey)
		// Without it Go's client asks GETs, not HEADs, for gzip: the headers would differ.
		req.Header.Set("Accept-Encoding", "identity")
		return send(t, srv, req)
	}
	for _, tc := range []struct {
		target     string
		status     int
		bodyVaries bool // the reply changes between two requests, and its length with it
	}{
		{"/healthz", http.StatusOK, false},
		{"/readyz", http.StatusOK, false},
		{"/metrics", http.StatusOK, true},
		{"/v1/openapi.json", http.StatusOK, false},
		{"/v1/messages", http.StatusOK, false},
		{"/v1/messages?limit=0", http.StatusBadRequest, false},
		{"/v1/messages/" + stored.Data.ID, http.StatusOK, false},
		{"/v1/messages/msg_AAAAAAAAAAAA", http.StatusNotFound, false},
		{"/portal", http.StatusOK, false},
		{"/portal/app.js", http.StatusOK, false},
		{"/nowhere", http.StatusNotFound, false},
	} {
		t.Run(tc.target, func(t *testing.T) {
			get, getBody := do(http.MethodGet, tc.target)
			head, headBody := do(http.MethodHead, tc.target)
			if get.StatusCode != tc.status || head.StatusCode != tc.status {
				t.Fatalf("GET %d, HEAD %d, want %d for both: %.200s", get.StatusCode, head.StatusCode, tc.status, getBody)
			}
			if len(getBody) == 0 || len(headBody) != 0 {
				t.Errorf("GET body of %d bytes, HEAD body of %d bytes; want a body only for GET", len(getBody), len(headBody))
			}
			ignored := []string{"Date", httpapi.RequestIDHeader}
			if tc.bodyVaries {
				ignored = append(ignored, "Content-Length")
			}
			for _, h := range []http.Header{get.Header, head.Header} {
				for _, name := range ignored {
					h.Del(name)
				}
			}
			for _, name := range slices.Concat(slices.Collect(maps.Keys(get.Header)), slices.Collect(maps.Keys(head.Header))) {
				if !slices.Equal(get.Header[name], head.Header[name]) {
					t.Errorf("%s: GET %q, HEAD %q", name, get.Header[name], head.Header[name])
				}
			}
		})
	}
}

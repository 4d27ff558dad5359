package httpapi

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// A reply computed for longer than the write timeout is still written: the
// timeout counts from the reply's first byte, not from the request.
func TestAReplyComputedPastTheWriteTimeoutIsWritten(t *testing.T) {
	const timeout = 150 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the work before the reply outlasts the write timeout
		case <-time.After(3 * timeout):
		case <-r.Context().Done():
			return
		}
		writeBody(w, http.StatusOK, []byte(`{"status":true}`))
	})
	s := ServerFor(&http.Server{Addr: "127.0.0.1:0", Handler: replyWindow(slow, timeout), WriteTimeout: timeout}, "test", nil, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	resp, err := http.Get("http://" + s.Addr().String() + "/v1/stats")
	if err != nil {
		t.Fatalf("the slow call's connection failed: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != `{"status":true}` {
		t.Fatalf("reply %q, %v; want the whole answer", body, err)
	}
}

package capture_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
)

// A client that hangs up halfway through its request body leaves no exchange
// behind: what arrived is half a request. A whole request after it is recorded.
func TestAClientThatHangsUpMidBodyIsNotRecorded(t *testing.T) {
	sub := &fakeSubmitter{}
	handlerDone := make(chan error, 1)
	rec, srv := startRecorder(t, sub, capture.Options{FlushInterval: never}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		handlerDone <- err
	}))

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n%s", strings.Repeat("a", 100))
	conn.Close()
	if err := <-handlerDone; err == nil {
		t.Fatal("the handler read the whole body of a request cut short")
	}
	conformance.WaitFor(t, "the abandoned exchange to be counted", func() bool { return rec.Stats().Abandoned == 1 })

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/upload", strings.NewReader("whole"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := send(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	<-handlerDone
	s := closeRecorder(t, rec)
	if s.Captured != 1 || s.Submitted != 1 || s.Abandoned != 1 {
		t.Errorf("stats %+v, want the whole request recorded and the cut one abandoned", s)
	}
	if got := sub.exchanges(); len(got) != 1 || got[0].Request.Body != "whole" {
		t.Errorf("stored %+v, want only the whole request", got)
	}
}

// A handler that aborts its reply (httputil.ReverseProxy on a broken stream) is
// recorded as far as it went, without claiming to know the reply's size; the
// panic still reaches net/http, which cuts the connection.
func TestAnAbortedReplyIsRecordedAsFarAsItWent(t *testing.T) {
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{FlushInterval: never, MaxBodyBytes: 10}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	resp, err := http.Get(srv.URL + "/stream")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Error("the client got the aborted reply as whole")
	}
	conformance.WaitFor(t, "the aborted exchange", func() bool { return rec.Stats().Captured == 1 })
	closeRecorder(t, rec)
	got := sub.exchanges()
	if len(got) != 1 || got[0].Response.Body != "xxxxxxxxxx…[truncated by reqlog capture: at least 100 bytes]" {
		t.Errorf("stored %+v", got)
	}
}

package httpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func durationPtr(d time.Duration) *time.Duration { return &d }

// withDuration is exchange(i) with a duration.
func withDuration(i int, d time.Duration) httpclient.Exchange {
	e := exchange(i)
	e.Duration, e.HasDuration = d, true
	return e
}

func TestMessageJSON(t *testing.T) {
	for _, tc := range []struct {
		wire string
		want time.Duration
		has  bool
		out  string
	}{
		{`1234.567`, 1234567 * time.Microsecond, true, `"duration_ms":1234.567`},
		{`0`, 0, true, `"duration_ms":0.000`},
		{`86400000`, domain.MaxDuration, true, `"duration_ms":86400000.000`},
		{`null`, 0, false, `"duration_ms":null`},
	} {
		var m httpclient.Message
		raw := `{"id":"x","request":{"header":{},"body":"ab","content_type":"text/plain","size":2},"duration_ms":` + tc.wire + `}`
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if m.Duration != tc.want || m.HasDuration != tc.has || m.ID != "x" || m.Request.Size != 2 {
			t.Errorf("%s decoded as duration %v (known %t), id %q, size %d", tc.wire, m.Duration, m.HasDuration, m.ID, m.Request.Size)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tc.out) || !strings.Contains(string(out), `"size":2`) {
			t.Errorf("%s encoded back as %s, want %s", tc.wire, out, tc.out)
		}
	}
	var m httpclient.Message
	if err := json.Unmarshal([]byte(`{"id":"x"}`), &m); err != nil || m.HasDuration {
		t.Errorf("no duration_ms: %+v, %v", m, err)
	}
	if err := json.Unmarshal([]byte(`{"duration_ms":"12"}`), &m); err == nil {
		t.Error("a string duration_ms was accepted")
	}
}

// Durations and sizes go to the service and come back as stored.
func TestDurationAndSizesRoundTrip(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	timed := withDuration(0, 1234567891*time.Nanosecond)
	timed.Request.Body = `{"password":"hunter2","note":"é"}`
	ids, err := c.Submit(ctx, timed, exchange(1))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Get(ctx, ids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasDuration || m.Duration != 1234567*time.Microsecond {
		t.Errorf("duration %v (known %t), want 1234.567ms", m.Duration, m.HasDuration)
	}
	if m.Request.Size != len(timed.Request.Body) || m.Response.Size != len(timed.Response.Body) {
		t.Errorf("sizes %d / %d, want %d / %d (as submitted, before redaction)", m.Request.Size, m.Response.Size,
			len(timed.Request.Body), len(timed.Response.Body))
	}
	if strings.Contains(m.Request.Body, "hunter2") {
		t.Errorf("the password was stored: %s", m.Request.Body)
	}
	untimed, err := c.Get(ctx, ids[1].ID)
	if err != nil || untimed.HasDuration {
		t.Errorf("a message without duration came back with %v (known %t), %v", untimed.Duration, untimed.HasDuration, err)
	}
	bad := withDuration(2, -time.Millisecond)
	var apiErr *httpclient.APIError
	if _, err := c.Submit(ctx, bad); !errors.As(err, &apiErr) || len(apiErr.Fields) != 1 || apiErr.Fields[0].Field != "[0].duration_ms" {
		t.Errorf("a negative duration: %v, want a 400 naming [0].duration_ms", err)
	}
}

func TestSearchAndDurationFilters(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	rare := exchange(3)
	rare.Response.Body = `{"order":"ord_8f7d","state":"failed"}`
	ids, err := c.Submit(ctx, withDuration(0, ms(10)), withDuration(1, ms(250)), withDuration(2, ms(1500)), rare)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts httpclient.ListOptions
		want []int // newest first
	}{
		{"q in a body, another case", httpclient.ListOptions{Search: "ORD_8F7D"}, []int{3}},
		{"q in the path", httpclient.ListOptions{Search: "orders/2"}, []int{2}},
		{"min, inclusive", httpclient.ListOptions{MinDuration: durationPtr(ms(250))}, []int{2, 1}},
		{"max, inclusive", httpclient.ListOptions{MaxDuration: durationPtr(ms(250))}, []int{1, 0}},
		{"min 0 leaves out messages without a duration", httpclient.ListOptions{MinDuration: durationPtr(0)}, []int{2, 1, 0}},
		{"both", httpclient.ListOptions{MinDuration: durationPtr(ms(10.001)), MaxDuration: durationPtr(ms(1499.999))}, []int{1}},
		{"with another filter", httpclient.ListOptions{Search: "verbose", Name: "billing"}, []int{3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want []string
			for m, err := range c.All(ctx, tc.opts) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m.ID)
			}
			for _, i := range tc.want {
				want = append(want, ids[i].ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	var apiErr *httpclient.APIError
	for field, opts := range map[string]httpclient.ListOptions{
		"q":               {Search: "--"},
		"max_duration_ms": {MinDuration: durationPtr(ms(5)), MaxDuration: durationPtr(ms(4))},
		"min_duration_ms": {MinDuration: durationPtr(-ms(1))},
	} {
		_, err := c.List(ctx, opts)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || len(apiErr.Fields) == 0 || apiErr.Fields[0].Field != field {
			t.Errorf("%+v: %v, want a 400 naming %s", opts, err, field)
		}
	}
}

func TestStats(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	at := func(e httpclient.Exchange, offset time.Duration, status int, path string) httpclient.Exchange {
		e.CreatedAt, e.Response.StatusCode, e.Path = from.Add(offset), status, path
		return e
	}
	// Buckets of an hour: two messages, none, two.
	if _, err := c.Submit(ctx,
		at(withDuration(0, ms(10)), 10*time.Minute, 200, "/a?x=1"),
		at(withDuration(2, ms(30)), 20*time.Minute, 500, "/a?x=2"),
		at(exchange(1), 2*time.Hour+5*time.Minute, 404, "/b"),
		at(withDuration(4, ms(20)), 2*time.Hour+6*time.Minute, 201, "/a"),
		at(exchange(6), 3*time.Hour+time.Minute, 200, "/out-of-range"),
	); err != nil {
		t.Fatal(err)
	}
	s, err := c.Stats(ctx, httpclient.StatsOptions{ListOptions: httpclient.ListOptions{From: from, To: from.Add(3 * time.Hour)}, Interval: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.From.Equal(from) || !s.To.Equal(from.Add(3*time.Hour)) || s.Interval != "1h" || len(s.Buckets) != 3 {
		t.Fatalf("range %v to %v by %s in %d buckets", s.From, s.To, s.Interval, len(s.Buckets))
	}
	if want := (httpclient.StatusCounts{Success: 2, ClientError: 1, ServerError: 1}); s.Total.Count != 4 || s.Total.Status != want {
		t.Errorf("total %d %+v, want 4 %+v", s.Total.Count, s.Total.Status, want)
	}
	// Three durations, 10, 20 and 30 ms: the median is exact, p95 and p99 lie
	// between the two largest.
	if d := s.Total.Duration; d == nil || d.Count != 3 || d.P50 != ms(20) || d.P95 < ms(20) || d.P95 > ms(30) || d.P99 < d.P95 || d.P99 > ms(30) {
		t.Errorf("total durations %+v", d)
	}
	for i, want := range []int64{2, 0, 2} {
		b := s.Buckets[i]
		if !b.Start.Equal(from.Add(time.Duration(i)*time.Hour)) || b.Count != want {
			t.Errorf("bucket %d starts %v with %d messages, want %v with %d", i, b.Start, b.Count, from.Add(time.Duration(i)*time.Hour), want)
		}
	}
	if s.Buckets[1].Duration != nil {
		t.Errorf("an empty bucket has durations %+v", s.Buckets[1].Duration)
	}
	if d := s.Buckets[2].Duration; d == nil || d.Count != 1 || d.P50 != ms(20) || d.P99 != ms(20) {
		t.Errorf("bucket 2 durations %+v, want one of 20ms", d)
	}
	wantPaths := []httpclient.KeyCount{{Key: "/a", Count: 3, Errors: 1}, {Key: "/b", Count: 1, Errors: 1}}
	if !slices.Equal(s.TopPaths, wantPaths) {
		t.Errorf("top paths %+v, want %+v", s.TopPaths, wantPaths)
	}
	wantNames := []httpclient.KeyCount{{Key: "shop", Count: 3, Errors: 1}, {Key: "billing", Count: 1, Errors: 1}}
	if !slices.Equal(s.TopNames, wantNames) {
		t.Errorf("top names %+v, want %+v", s.TopNames, wantNames)
	}

	filtered, err := c.Stats(ctx, httpclient.StatsOptions{ListOptions: httpclient.ListOptions{
		From: from, To: from.Add(3 * time.Hour), MinDuration: durationPtr(ms(15)), Limit: 1, Cursor: "ignored"}})
	if err != nil {
		t.Fatal(err)
	}
	if filtered.Total.Count != 2 || filtered.Interval == "" || len(filtered.Buckets) == 0 {
		t.Errorf("filtered on min 15ms: %d messages in %d buckets of %q, want 2", filtered.Total.Count, len(filtered.Buckets), filtered.Interval)
	}

	var apiErr *httpclient.APIError
	if _, err := c.Stats(ctx, httpclient.StatsOptions{Interval: "2m"}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Fields[0].Field != "interval" {
		t.Errorf("interval 2m: %v, want a 400 naming interval", err)
	}
}

func TestExport(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	exchanges := make([]httpclient.Exchange, 230)
	for i := range exchanges {
		exchanges[i] = withDuration(i, ms(float64(i)))
	}
	if _, err := c.Submit(ctx, exchanges...); err != nil {
		t.Fatal(err)
	}
	collect := func(seq func(func(httpclient.Message, error) bool)) []httpclient.Message {
		var all []httpclient.Message
		for m, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
		}
		return all
	}
	listed := collect(c.All(ctx, httpclient.ListOptions{Limit: 100}))
	exported := collect(c.Export(ctx, httpclient.ListOptions{}))
	if len(exported) != 230 || len(listed) != 230 {
		t.Fatalf("exported %d, listed %d, want 230", len(exported), len(listed))
	}
	for i := range listed {
		e, l := exported[i], listed[i]
		if e.ID != l.ID || e.Duration != l.Duration || !e.HasDuration || e.Response.Size != l.Response.Size || e.Response.Body != l.Response.Body {
			t.Fatalf("message %d exported as %+v, listed as %+v", i, e, l)
		}
	}
	if got := collect(c.Export(ctx, httpclient.ListOptions{Limit: 7, Name: "billing"})); len(got) != 7 || got[0].ID != listed[0].ID || got[6].Name != "billing" {
		t.Errorf("limit 7 of billing: %d messages", len(got))
	}
	if got := collect(c.Export(ctx, httpclient.ListOptions{Search: "orders/17?"})); len(got) != 1 || got[0].Path != "/orders/17?verbose=1" {
		t.Errorf("export with q: %+v", got)
	}
	var apiErr *httpclient.APIError
	calls := 0
	for _, err := range c.Export(ctx, httpclient.ListOptions{Limit: 100_001}) {
		calls++
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Fields[0].Field != "limit" {
			t.Errorf("limit 100001: %v, want a 400 naming limit", err)
		}
	}
	if calls != 1 {
		t.Errorf("an export refused yielded %d times, want once", calls)
	}
}

// The iterator yields each message as its line arrives, and a stream cut short
// ends with an error, not silently.
func TestExportStreams(t *testing.T) {
	line := func(i int) string {
		raw, err := json.Marshal(httpclient.Message{ID: fmt.Sprintf("m%d", i), Duration: ms(float64(i)), HasDuration: true})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw) + "\n"
	}
	firstSeen := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages/export" || r.URL.Query().Get("format") != "ndjson" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, line(1))
		w.(http.Flusher).Flush()
		select { // the second line exists only once the caller holds the first message
		case <-firstSeen:
		case <-time.After(10 * time.Second):
			return
		}
		_, _ = io.WriteString(w, line(2)+`{"id":"m3","dura`)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack() // cut: no end of the chunked body
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	var got []string
	var last error
	for m, err := range c.Export(context.Background(), httpclient.ListOptions{}) {
		if err != nil {
			last = err
			break
		}
		got = append(got, m.ID)
		if m.ID == "m1" {
			if m.Duration != ms(1) {
				t.Errorf("m1 has duration %v", m.Duration)
			}
			close(firstSeen)
		}
	}
	if !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("yielded %v, want m1 then m2", got)
	}
	if last == nil || !errors.Is(last, ports.ErrUnavailable) {
		t.Errorf("a cut stream ended with %v, want an error matching ports.ErrUnavailable", last)
	}
}

// Until the stream starts, an export is retried as any GET is.
func TestExportRetriesBeforeTheStream(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":false,"message":"the store is unavailable"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"m1","duration_ms":null}`+"\n")
	}))
	t.Cleanup(srv.Close)
	var got []string
	for m, err := range newClient(t, srv.URL).Export(context.Background(), httpclient.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	if !slices.Equal(got, []string{"m1"}) || calls.Load() != 2 {
		t.Errorf("yielded %v after %d calls, want m1 after a retry", got, calls.Load())
	}
}

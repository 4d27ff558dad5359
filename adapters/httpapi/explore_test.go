package httpapi_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// pagedStore answers List with pages of one message each, failing from call
// failFrom on (0: never), and records the limits it was asked for.
type pagedStore struct {
	ports.MessageStore
	failFrom int
	mu       sync.Mutex
	limits   []int
}

func (s *pagedStore) List(_ context.Context, q domain.Query, _ time.Time) (domain.Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, q.Limit)
	if s.failFrom > 0 && len(s.limits) >= s.failFrom {
		return domain.Page{}, fmt.Errorf("backend gone: %w", ports.ErrUnavailable)
	}
	at := start.Add(-time.Duration(len(s.limits)) * time.Second)
	id := fmt.Sprintf("01959000-0000-7000-8000-%012d", 1000-len(s.limits))
	m := domain.Message{ID: id, Reference: "msg_AAAAAAAAAAA" + fmt.Sprint(len(s.limits)%10), Account: "acme", Domain: domain.DomainLive,
		Name: "shop", Method: "GET", Path: "/p", StatusCode: 200, CreatedAt: at, UpdatedAt: at}
	return domain.Page{Messages: []domain.Message{m}, HasMore: true}, nil
}

func (s *pagedStore) calls() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.limits...)
}

// A store failing once the export's 200 has gone out cuts the connection: the
// client reads the pages sent so far, then an error, never a clean end.
func TestExportFailingMidStreamCutsTheConnection(t *testing.T) {
	for _, format := range []string{"ndjson", "csv"} {
		t.Run(format, func(t *testing.T) {
			store := &pagedStore{MessageStore: memory.New(), failFrom: 3}
			f := newFixture(t, setup{store: store})
			srv := httptest.NewServer(f.handler)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/messages/export?format="+format, nil)
			req.Header.Set("Authorization", "Bearer "+liveKey)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("status %d, read error %v; want 200 and an unexpected EOF", resp.StatusCode, err)
			}
			lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			if format == "csv" {
				lines = lines[1:] // the header
			}
			if len(lines) != 2 {
				t.Errorf("read %d records before the cut, want the 2 pages sent: %q", len(lines), body)
			}
			if f.logs.FilterMessage("export failed after its reply began; connection cut").Len() != 1 {
				t.Errorf("the cut was not logged: %v", f.logs.All())
			}
		})
	}
}

// A store failing before anything is sent gets the usual error reply.
func TestExportFailingAtOnceIsAnErrorReply(t *testing.T) {
	f := newFixture(t, setup{store: &pagedStore{MessageStore: memory.New(), failFrom: 1}})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/export?format=csv", header: authed()})
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Content-Disposition") != "" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("%d %v %s; want a 503 JSON reply with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	decodeError(t, rec, http.StatusServiceUnavailable)
}

// HEAD answers with GET's status and headers but reads one message, not all.
func TestExportHeadReadsOneMessage(t *testing.T) {
	store := &pagedStore{MessageStore: memory.New()}
	f := newFixture(t, setup{store: store})
	rec := f.do(t, request{method: http.MethodHead, target: "/v1/messages/export?format=csv", header: authed()})
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(rec.Header().Get("Content-Disposition"), "attachment;") {
		t.Errorf("HEAD: %d %v", rec.Code, rec.Header())
	}
	if got := store.calls(); len(got) != 1 || got[0] != 1 {
		t.Errorf("HEAD asked the store for limits %v, want one page of 1", got)
	}
}

// A GET export pages through the store until it has the limit.
func TestExportPagesUpToTheLimit(t *testing.T) {
	store := &pagedStore{MessageStore: memory.New()}
	f := newFixture(t, setup{store: store})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/export?limit=4", header: authed()})
	if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "\n") != 4 {
		t.Fatalf("%d %q, want 4 lines", rec.Code, rec.Body)
	}
	if got := store.calls(); fmt.Sprint(got) != "[4 3 2 1]" {
		t.Errorf("the store was asked for limits %v, want [4 3 2 1] (what remains each time)", got)
	}
}

// CSV fields that need quoting are quoted as RFC 4180 says; a newline inside a
// field is kept as it is.
func TestExportCSVQuoting(t *testing.T) {
	store := memory.New()
	at := start.Add(-time.Minute)
	m := domain.Message{ID: "01959000-0000-7000-8000-000000000001", Reference: "msg_AAAAAAAAAAAB", Account: "acme", Domain: domain.DomainLive,
		Name: "shop, \"eu\"\nline", Method: "GET", Path: "/p?a=1,2", StatusCode: 200, Duration: 41200 * time.Microsecond, HasDuration: true,
		Request: domain.Content{Size: 12}, CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at.Add(time.Hour)}
	if err := store.Append(context.Background(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, setup{store: store})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/export?format=csv", header: authed()})
	want := "created_at,id,reference,name,method,path,status_code,duration_ms,ip_address,request.size,response.size\n" +
		"2025-03-14T11:59:00.000000Z,01959000-0000-7000-8000-000000000001,msg_AAAAAAAAAAAB,\"shop, \"\"eu\"\"\nline\",GET,\"/p?a=1,2\",200,41.2,,12,0\n"
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("%d\n%q\nwant\n%q", rec.Code, rec.Body, want)
	}
}

// fixedStatsStore answers Stats with its own statistics in the asked shape.
type fixedStatsStore struct {
	ports.MessageStore
	total stats.Bucket
}

func (s fixedStatsStore) Stats(_ context.Context, q stats.Query, _ time.Time) (stats.Stats, error) {
	st := stats.New(q)
	st.Total = s.total
	return st, nil
}

// Percentiles are written to the microsecond, whatever a store estimated.
func TestStatsPercentilesAreWrittenToTheMicrosecond(t *testing.T) {
	total := stats.Bucket{Count: 3, Status: stats.StatusCounts{0, 3}, Duration: stats.DurationSummary{
		Count: 3, P50: 41.20000000001, P95: 0.0000004, P99: 1210.4996}}
	f := newFixture(t, setup{store: fixedStatsStore{MessageStore: memory.New(), total: total}})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/stats?interval=1h", header: authed()})
	want := `"total":{"count":3,"dropped":0,"status":{"1xx":0,"2xx":3,"3xx":0,"4xx":0,"5xx":0},"duration_ms":{"count":3,"p50":41.2,"p95":0,"p99":1210.5}}`
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("%d %s\nwant it to hold %s", rec.Code, rec.Body, want)
	}
}

// The formulas a spreadsheet would run, submitted as names and methods (any HTTP
// token may start with + or -), come out of the CSV export as text: each with a
// leading '. NDJSON keeps them as they are.
func TestExportCSVDefusesSubmittedFormulas(t *testing.T) {
	f := newFixture(t, setup{})
	cases := []struct{ name, method string }{
		{`=cmd|' /C calc'!A0`, "+CMD|'CALC'!A0"},
		{"+SUM(1+1)", "-1+1"},
		{"-2+3", "GET"},
		{"@SUM(1+1)", "POST"},
	}
	for i, c := range cases {
		body := fmt.Sprintf(`{"name":%q,"created_at":%d,"method":%q,"path":"/p","request":{},"response":{"status_code":200}}`,
			c.name, start.Add(time.Duration(i-10)*time.Second).Unix(), c.method)
		rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: body, header: authed()})
		if rec.Code != http.StatusOK {
			t.Fatalf("submitting %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/export?format=csv", header: authed()})
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if rec.Code != http.StatusOK || err != nil || len(rows) != 5 {
		t.Fatalf("%d, %d rows, %v: %s", rec.Code, len(rows), err, rec.Body)
	}
	for i, row := range rows[1:] { // newest first: the cases in reverse
		c := cases[len(cases)-1-i]
		wantMethod := c.method
		if strings.ContainsAny(c.method[:1], "+-@") {
			wantMethod = "'" + c.method
		}
		if row[3] != "'"+c.name || row[4] != wantMethod {
			t.Errorf("row %d: name %q, method %q; want %q, %q", i, row[3], row[4], "'"+c.name, wantMethod)
		}
	}
	rec = f.do(t, request{method: http.MethodGet, target: "/v1/messages/export", header: authed()})
	if !strings.Contains(rec.Body.String(), `"name":"=cmd|' /C calc'!A0"`) || !strings.Contains(rec.Body.String(), `"method":"-1+1"`) {
		t.Errorf("NDJSON changed the values: %s", rec.Body)
	}
}

// expiringStore is a memory store whose oldest messages expire, and are purged,
// once the export has read its first page.
type expiringStore struct {
	*memory.Store
	clock interface {
		Advance(time.Duration)
		Now() time.Time
	}
	expireAfter time.Duration
	mu          sync.Mutex
	lists       int
}

func (s *expiringStore) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	s.mu.Lock()
	s.lists++
	if s.lists == 2 && s.expireAfter > 0 {
		s.clock.Advance(s.expireAfter)
		if _, err := s.PurgeExpired(ctx, s.clock.Now()); err != nil {
			s.mu.Unlock()
			return domain.Page{}, err
		}
	}
	s.mu.Unlock()
	return s.Store.List(ctx, q, now)
}

// An export over messages that expire while it runs says so: its trailer
// Reqlog-Export-Expired-Before names the instant before which messages may
// be missing. One whose range nothing could leave has no such trailer.
func TestExportOverExpiringMessagesSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name        string
		expireAfter time.Duration
		query       string
		lines       int
		expired     bool
	}{
		{"messages expire mid-stream", 2 * time.Minute, "", 1500, true},
		{"nothing expires", 0, "", 2500, false},
		{"a range after the edge", 2 * time.Minute, "&from=" + fmt.Sprint(start.Add(-2*time.Hour).Unix()), 1500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &expiringStore{Store: memory.New(), expireAfter: tc.expireAfter}
			f := newFixture(t, setup{store: store})
			store.clock = f.clock
			edge := start.Add(-domain.DefaultRetention)
			var msgs []domain.Message
			for i := range 2500 {
				at := start.Add(-time.Hour + time.Duration(i)*time.Millisecond) // 1,500 recent ones
				if i >= 1500 {
					at = edge.Add(time.Minute + time.Duration(i)*time.Millisecond) // 1,000 a minute from expiring
				}
				msgs = append(msgs, domain.Message{ID: fmt.Sprintf("01959000-0000-7000-8000-%012d", i), Reference: fmt.Sprintf("msg_%011d", i),
					Account: "acme", Domain: domain.DomainLive, Name: "shop", Method: "GET", Path: "/p", StatusCode: 200, CreatedAt: at, UpdatedAt: at,
					VisibleAt: at, ExpiresAt: at.Add(domain.DefaultRetention)})
			}
			if err := store.Append(t.Context(), msgs); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(f.handler)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/messages/export?format=ndjson"+tc.query, nil)
			req.Header.Set("Authorization", "Bearer "+liveKey)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, announced := resp.Trailer[httpapi.ExpiredTrailer]; !announced {
				t.Errorf("trailers announced %v, want %s among them", resp.Trailer, httpapi.ExpiredTrailer)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			if n := strings.Count(string(body), "\n"); n != tc.lines {
				t.Errorf("%d lines, want %d", n, tc.lines)
			}
			got := resp.Trailer.Get(httpapi.ExpiredTrailer)
			if !tc.expired {
				if got != "" {
					t.Errorf("Reqlog-Export-Expired-Before %q, want none", got)
				}
				return
			}
			at, err := time.Parse(time.RFC3339Nano, got)
			if err != nil || !at.After(edge.Add(time.Minute+2500*time.Millisecond)) || at.After(edge.Add(tc.expireAfter+time.Second)) {
				t.Errorf("Reqlog-Export-Expired-Before %q (%v), want the retention's edge at the export's end, past every expired message", got, err)
			}
		})
	}
}

package elastic_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// dayIndex is the index of the UTC day of t under cfg's prefix, spelt out here
// rather than taken from the adapter.
func dayIndex(prefix string, t time.Time) string {
	return prefix + "-messages-" + t.UTC().Format("2006.01.02")
}

// A mapping conflict rejects one item of a bulk request: the batch fails and
// says which message, the others are stored, and the failure is not transient.
func TestAppendReportsRejectedItem(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now()
	good := message(t, now)
	bad := message(t, now.Add(-48*time.Hour))
	// The template makes the index strict; the request makes "method" a number,
	// which no message's method is.
	c.must(http.MethodPut, "/"+dayIndex(cfg.IndexPrefix, bad.CreatedAt), map[string]any{
		"mappings": map[string]any{"properties": map[string]any{"method": map[string]any{"type": "integer"}}},
	}, nil)

	err := s.Append(t.Context(), []domain.Message{good, bad})
	if err == nil {
		t.Fatal("Append of a batch with a rejected item: nil error, want one")
	}
	if errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append: %v wraps ErrUnavailable, but retrying cannot help", err)
	}
	// The report names the failed message, and only that one.
	if !strings.Contains(err.Error(), bad.ID) || strings.Contains(err.Error(), good.ID) {
		t.Errorf("Append error %q should name %s and not %s", err, bad.ID, good.ID)
	}
	// It gives the cluster's status and reason, which name the field.
	if !strings.Contains(err.Error(), "status 400") || !strings.Contains(err.Error(), "[method]") {
		t.Errorf("Append error %q should give the item's status 400 and the reason naming [method]", err)
	}
	waitReadable(t, s, now.Add(time.Second), good)
	assertAbsent(t, s, cfg.IndexPrefix, bad, now.Add(time.Second))
}

// A write-blocked index refuses writes for now: the batch fails with
// ErrUnavailable, and the same batch succeeds once the block is lifted.
func TestAppendIntoBlockedIndexIsUnavailable(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now()
	first := message(t, now.Add(-24*time.Hour))
	if err := s.Append(t.Context(), []domain.Message{first}); err != nil {
		t.Fatal(err)
	}
	index := dayIndex(cfg.IndexPrefix, first.CreatedAt)
	c.must(http.MethodPut, "/"+index+"/_block/write", nil, nil)

	blocked := message(t, first.CreatedAt.Add(time.Millisecond))
	batch := []domain.Message{first, blocked}
	err := s.Append(t.Context(), batch)
	wantUnavailable(t, "Append into a write-blocked index", err)
	if err != nil && !strings.Contains(err.Error(), blocked.ID) {
		t.Errorf("Append error %q should name %s", err, blocked.ID)
	}

	c.must(http.MethodPut, "/"+index+"/_settings", map[string]any{"index.blocks.write": nil}, nil)
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("Append after the block was lifted: %v", err)
	}
	waitReadable(t, s, now, first, blocked)
}

// A message that exists already (409 in the bulk reply) counts as stored.
func TestAppendExistingIsSuccess(t *testing.T) {
	s, _ := newStore(t)
	now := time.Now()
	stored := message(t, now)
	if err := s.Append(t.Context(), []domain.Message{stored}); err != nil {
		t.Fatal(err)
	}
	retry := stored.Clone()
	retry.Path = "/changed"
	added := message(t, now.Add(-time.Hour))
	if err := s.Append(t.Context(), []domain.Message{retry, added, retry}); err != nil {
		t.Fatalf("Append of a batch with an existing id: %v", err)
	}
	waitReadable(t, s, now.Add(time.Second), stored, added)
	got, err := s.Get(t.Context(), scope, stored.ID, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != stored.Path {
		t.Errorf("the re-appended message has path %q, want the first write's %q", got.Path, stored.Path)
	}
}

// appendedUnsynced opens a store with requestTimeout and appends one message
// into a day index whose translog is synced only hourly: the write stays
// unsynced, as one still running would be.
func appendedUnsynced(t *testing.T, requestTimeout time.Duration) (c cluster, s *elastic.Store, index string, first domain.Message) {
	t.Helper()
	c = newCluster(t)
	s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.RequestTimeout, cfg.DurabilityWait = requestTimeout, requestTimeout })
	first = message(t, time.Now())
	index = dayIndex(cfg.IndexPrefix, first.CreatedAt)
	c.must(http.MethodPut, "/"+index, map[string]any{"settings": map[string]any{
		"index.translog.durability": "async", "index.translog.sync_interval": "1h"}}, nil)
	if err := s.Append(t.Context(), []domain.Message{first}); err != nil {
		t.Fatal(err)
	}
	return c, s, index, first
}

// A create that finds its message there counts only once that message is
// durable: the write that created it may still be running, unsynced. Here the
// first write is left unsynced by the index's async translog, as a write still
// running would be; the retry is unavailable until a sync covers it.
func TestAppendExistingCountsOnceDurable(t *testing.T) {
	c, s, index, first := appendedUnsynced(t, 2*time.Second)
	err := s.Append(t.Context(), []domain.Message{first})
	wantUnavailable(t, "Append again before the first write was synced", err)
	if err != nil && !strings.Contains(err.Error(), "of "+index+", the global checkpoint is") {
		t.Errorf("Append error %q should say which index's checkpoint is behind", err)
	}

	// A write of the index's default durability syncs the translog, the first
	// write's operation with it.
	c.must(http.MethodPut, "/"+index+"/_settings", map[string]any{"index.translog.durability": "request"}, nil)
	if err := s.Append(t.Context(), []domain.Message{message(t, first.CreatedAt.Add(time.Millisecond))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Append of the synced message", 30*time.Second, func() error {
		return s.Append(t.Context(), []domain.Message{first})
	})
}

// A document replaced while its durability is awaited (as a failed-over
// primary's successor reuses a lost operation's place) is not counted: the
// document is read again once its checkpoint passes, and must be the one read
// before.
func TestAppendExistingMustBeTheDocumentAwaited(t *testing.T) {
	c, s, index, first := appendedUnsynced(t, time.Minute)
	gets := func() int64 {
		var stats struct {
			All struct {
				Total struct {
					Get struct {
						Total int64 `json:"total"`
					} `json:"get"`
				} `json:"total"`
			} `json:"_all"`
		}
		c.must(http.MethodGet, "/"+index+"/_stats/get", nil, &stats)
		return stats.All.Total.Get.Total
	}
	before := gets()
	retried := make(chan error, 1)
	go func() { retried <- s.Append(t.Context(), []domain.Message{first}) }()
	waitFor(t, "the retry to read the document", 30*time.Second, func() error {
		if gets() == before {
			return errors.New("no realtime get yet")
		}
		return nil
	})
	// The document is replaced, then everything is synced: the checkpoint passes
	// the sequence number the retry awaits.
	c.must(http.MethodPut, "/"+index+"/_doc/"+first.ID+"?refresh=false", map[string]any{"id": first.ID}, nil)
	c.must(http.MethodPut, "/"+index+"/_settings", map[string]any{"index.translog.durability": "request"}, nil)
	if err := s.Append(t.Context(), []domain.Message{message(t, first.CreatedAt.Add(time.Millisecond))}); err != nil {
		t.Fatal(err)
	}
	err := <-retried
	wantUnavailable(t, "a retry whose document was replaced", err)
	if err != nil && !strings.Contains(err.Error(), "changed from sequence number") {
		t.Errorf("Append error %q should say the document changed", err)
	}
}

func TestAppendRefusesUnstorableMessages(t *testing.T) {
	s, cfg := newStore(t)
	now := time.Now()
	for _, tc := range []struct {
		name string
		edit func(*domain.Message)
	}{
		{"no id", func(m *domain.Message) { m.ID = "" }},
		{"created before 1970", func(m *domain.Message) { m.CreatedAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"zero visible time", func(m *domain.Message) { m.VisibleAt = time.Time{} }},
		{"expiry after 2262", func(m *domain.Message) { m.ExpiresAt = time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good, bad := message(t, now), message(t, now)
			tc.edit(&bad)
			err := s.Append(t.Context(), []domain.Message{good, bad})
			if err == nil || errors.Is(err, ports.ErrUnavailable) {
				t.Fatalf("Append: %v, want a permanent error", err)
			}
			// Refused before sending: nothing of the batch is stored.
			assertAbsent(t, s, cfg.IndexPrefix, good, now.Add(time.Second))
		})
	}
}

// assertAbsent refreshes the store's indices, so that every acknowledged
// write is searchable, and fails unless Get reports m not found at now.
func assertAbsent(t *testing.T, s ports.MessageStore, prefix string, m domain.Message, now time.Time) {
	t.Helper()
	newCluster(t).must(http.MethodPost, "/"+prefix+"-messages-*/_refresh?allow_no_indices=true", nil, nil)
	if _, err := s.Get(t.Context(), m.Scope(), m.ID, now); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get(%s): %v, want ErrNotFound", m.ID, err)
	}
}

// wantTooLargeAndAbsent appends each batch, all holding big, and fails unless
// each is refused with domain.ErrTooLarge naming big, with nothing stored.
func wantTooLargeAndAbsent(t *testing.T, s *elastic.Store, prefix string, big domain.Message, batches ...[]domain.Message) {
	t.Helper()
	for _, batch := range batches {
		err := s.Append(t.Context(), batch)
		if !errors.Is(err, domain.ErrTooLarge) || errors.Is(err, ports.ErrUnavailable) {
			t.Fatalf("Append of %d messages, one too large: %v, want an error wrapping domain.ErrTooLarge only", len(batch), err)
		}
		if !strings.Contains(err.Error(), big.ID) {
			t.Errorf("Append error %q should name %s", err, big.ID)
		}
		for _, m := range batch {
			assertAbsent(t, s, prefix, m, m.VisibleAt.Add(time.Second))
		}
	}
}

// A message larger than one request may carry (http.max_content_length, 100
// MiB by default) fails its whole batch before anything is sent. Without the
// check the cluster refuses the request as a whole, with a 413 that said
// nothing about which message.
func TestAppendRefusesMessageOverRequestLimit(t *testing.T) {
	s, cfg := newStore(t)
	now := time.Now()
	good := message(t, now)
	big := message(t, now)
	big.Response.Body = strings.Repeat("x", elastic.DefaultMaxRequestBytes)
	wantTooLargeAndAbsent(t, s, cfg.IndexPrefix, big, []domain.Message{big}, []domain.Message{good, big}, []domain.Message{big, good})
}

// A keyword longer than Lucene's 32,766-byte term limit would fail its own
// document and leave the rest of the bulk request stored; the domain's limits
// keep every field far below it, and the store refuses the batch if not.
func TestAppendRefusesOverlongKeyword(t *testing.T) {
	s, cfg := newStore(t)
	now := time.Now()
	good := message(t, now)
	long := message(t, now)
	long.Path = "/" + strings.Repeat("a", 32766)
	wantTooLargeAndAbsent(t, s, cfg.IndexPrefix, long, []domain.Message{good, long})
}

// limitedCluster is a proxy to the test cluster that, like a cluster whose
// http.max_content_length is limit, refuses a larger request whole with 413.
// It records the size of every bulk request it passes on.
type limitedCluster struct {
	url   string
	mu    sync.Mutex
	bulks []int
}

func newLimitedCluster(t *testing.T, limit int) *limitedCluster {
	t.Helper()
	target, err := url.Parse(newCluster(t).base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	lc := &limitedCluster{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if len(body) > limit {
			http.Error(w, `{"error":"Request Entity Too Large","status":413}`, http.StatusRequestEntityTooLarge)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/_bulk") {
			lc.mu.Lock()
			lc.bulks = append(lc.bulks, len(body))
			lc.mu.Unlock()
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	lc.url = server.URL
	return lc
}

// bulkSizes returns the sizes of the bulk requests passed on so far.
func (lc *limitedCluster) bulkSizes() []int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return append([]int(nil), lc.bulks...)
}

// A batch larger than MaxRequestBytes goes in several requests, none over it;
// a message whose entry alone is over it fails the batch before any request.
func TestAppendSplitsBulkRequests(t *testing.T) {
	const limit = 64 << 10
	lc := newLimitedCluster(t, limit)
	s, cfg := newStore(t, func(cfg *elastic.Config) {
		cfg.Addresses = []string{lc.url}
		cfg.MaxRequestBytes = limit
	})
	now := time.Now()
	batch := make([]domain.Message, 7)
	for i := range batch {
		batch[i] = message(t, now.Add(-time.Duration(i)*time.Hour)) // several daily indices
		batch[i].Request.Body = strings.Repeat("b", 20<<10)
	}
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("Append of %d messages of 20 KiB with requests of at most %d bytes: %v", len(batch), limit, err)
	}
	sizes := lc.bulkSizes()
	total := 0
	for _, size := range sizes {
		total += size
	}
	if len(sizes) < 3 || total < len(batch)*20<<10 {
		t.Errorf("bulk requests of %v bytes, want at least 3 holding every message", sizes)
	}
	waitReadable(t, s, now.Add(time.Second), batch...)

	big := message(t, now)
	big.Response.Body = strings.Repeat("x", limit)
	wantTooLargeAndAbsent(t, s, cfg.IndexPrefix, big, []domain.Message{message(t, now), big})
	if after := lc.bulkSizes(); len(after) != len(sizes) {
		t.Errorf("bulk requests of %v bytes were sent for a refused batch", after[len(sizes):])
	}
}

// A cluster whose http.max_content_length is below MaxRequestBytes refuses a
// request whole with 413: that is domain.ErrTooLarge too, not a bug.
func TestAppendRequestRefusedAsTooLarge(t *testing.T) {
	const limit = 64 << 10
	lc := newLimitedCluster(t, limit)
	s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.Addresses = []string{lc.url} })
	big := message(t, time.Now())
	big.Response.Body = strings.Repeat("x", limit)
	err := s.Append(t.Context(), []domain.Message{big})
	if !errors.Is(err, domain.ErrTooLarge) || errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("Append refused by the cluster with 413: %v, want an error wrapping domain.ErrTooLarge only", err)
	}
	assertAbsent(t, s, cfg.IndexPrefix, big, big.VisibleAt.Add(time.Second))
}

// Through the API, a valid request with a message over MaxRequestBytes is a
// 413 naming Elasticsearch's limit, not a 500, and nothing of it is stored.
func TestAPIRefusesSubmissionOverRequestLimit(t *testing.T) {
	const limit = 64 << 10
	s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.MaxRequestBytes = limit })
	const key = "elastic-limit-key"
	api := httpapitest.Serve(t, s, conformance.APIConfig{
		Keys:   []conformance.APIKey{{Account: scope.Account, Domain: scope.Domain, Key: key}},
		Policy: domain.DefaultPolicy(),
	})
	submission := func(body string) string {
		return fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"POST","path":"/orders","request":{"body":%q},"response":{"status_code":201}}`,
			time.Now().Unix(), body)
	}
	status, message := httpapitest.Submit(t, api, key, "["+submission("small")+","+submission(strings.Repeat("x", limit))+"]")
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(message, "Elasticsearch") {
		t.Errorf("POST: %d %q, want 413 naming Elasticsearch's limit", status, message)
	}
	newCluster(t).must(http.MethodPost, "/"+cfg.IndexPrefix+"-messages-*/_refresh?allow_no_indices=true", nil, nil)
	page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10}, time.Now().Add(time.Hour))
	if err != nil || len(page.Messages) != 0 {
		t.Errorf("List after the refusal: %d messages, %v; want none", len(page.Messages), err)
	}
}

// A message's subject hashes are stored in its document's keyword field
// subjects (the strict mapping holds it), and no read returns them.
func TestAppendStoresSubjects(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now()
	m := message(t, now)
	m.Subjects = []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"}
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatalf("Append of a message with subjects: %v", err)
	}
	stored := m
	stored.Subjects = nil
	waitReadable(t, s, now.Add(time.Second), stored)
	var found struct {
		Hits struct {
			Total struct{ Value int } `json:"total"`
		} `json:"hits"`
	}
	c.must(http.MethodPost, "/"+dayIndex(cfg.IndexPrefix, m.CreatedAt)+"/_search", map[string]any{
		"query": map[string]any{"term": map[string]any{"subjects": m.Subjects[1]}},
	}, &found)
	if found.Hits.Total.Value != 1 {
		t.Errorf("a search of the subjects field finds %d documents, want 1", found.Hits.Total.Value)
	}
}

package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// gateStore records every batch it is asked to write. Each Append first waits
// for the gate to open (unless the gate is nil), so a test can keep the writers
// busy while callers queue up; fail decides each batch's outcome.
type gateStore struct {
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{} // gets a token when an Append reaches the gate
	batches [][]string    // ids, per Append call
	stored  map[string]domain.Message
	fail    func(ids []string) error
}

func newGateStore() *gateStore {
	return &gateStore{gate: make(chan struct{}), entered: make(chan struct{}, 100), stored: map[string]domain.Message{}}
}

func (s *gateStore) Append(ctx context.Context, msgs []domain.Message) error {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return fmt.Errorf("gate: %w: %w", ports.ErrUnavailable, ctx.Err())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, ids)
	if s.fail != nil {
		if err := s.fail(ids); err != nil {
			return err
		}
	}
	for _, m := range msgs {
		s.stored[m.ID] = m
	}
	return nil
}

// open lets every waiting and future Append through.
func (s *gateStore) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// shut makes future Appends wait at a new gate.
func (s *gateStore) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

func (s *gateStore) batchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sizes := make([]int, len(s.batches))
	for i, b := range s.batches {
		sizes[i] = len(b)
	}
	return sizes
}

func (s *gateStore) has(id string) bool {
	_, ok := s.message(id)
	return ok
}

func (s *gateStore) message(id string) (domain.Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.stored[id]
	return m, ok
}

// depthRecorder is a QueueMetrics that keeps the last and the largest depth.
type depthRecorder struct {
	mu                  sync.Mutex
	messages, peak      int
	bytes, observations int64
}

func (d *depthRecorder) ObserveQueue(messages int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.messages, d.bytes = messages, bytes
	d.peak = max(d.peak, messages)
	d.observations++
}

func (d *depthRecorder) depth() (messages int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.messages, d.bytes
}

func msgs(ids ...string) []domain.Message {
	out := make([]domain.Message, len(ids))
	for i, id := range ids {
		out[i] = domain.Message{ID: id, Name: "shop", Path: "/orders/" + id}
	}
	return out
}

// call is one Append running in the background.
type call struct {
	id   string
	done chan error
}

func appendAsync(ctx context.Context, w ports.MessageWriter, ids ...string) call {
	c := call{id: ids[0], done: make(chan error, 1)}
	go func() { c.done <- w.Append(ctx, msgs(ids...)) }()
	return c
}

// blockedCommitter returns a committer on a gateStore whose only writer is busy
// with a first call waiting at the gate, the depth it reports, and that call.
func blockedCommitter(t *testing.T, opts app.GroupCommitOptions) (*app.GroupCommitter, *gateStore, *depthRecorder, call) {
	t.Helper()
	store, depth := newGateStore(), &depthRecorder{}
	opts.Metrics = depth
	g := app.NewGroupCommitter(store, opts)
	return g, store, depth, startBlocked(t, g, store)
}

// startBlocked makes the committer's only writer busy with a first call that
// waits at the store's gate, and returns that call.
func startBlocked(t *testing.T, g *app.GroupCommitter, store *gateStore) call {
	t.Helper()
	first := appendAsync(t.Context(), g, "first")
	<-store.entered
	return first
}

// waitQueued waits until the committer holds n messages, queued or being written.
func waitQueued(t *testing.T, depth *depthRecorder, n int) {
	t.Helper()
	conformance.WaitFor(t, fmt.Sprintf("%d messages held by the committer", n), func() bool {
		m, _ := depth.depth()
		return m == n
	})
}

func closeCommitter(t *testing.T, g *app.GroupCommitter) {
	t.Helper()
	if err := g.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestGroupCommitCoalescesConcurrentCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxBatchMessages: 4})

	// Ten single-message calls and one of three queue behind the busy writer.
	var calls []call
	for i := range 10 {
		calls = append(calls, appendAsync(t.Context(), g, "m"+strconv.Itoa(i)))
	}
	waitQueued(t, depth, 11)
	calls = append(calls, appendAsync(t.Context(), g, "x1", "x2", "x3"))
	waitQueued(t, depth, 14)
	store.open()
	for _, c := range append(calls, first) {
		if err := <-c.done; err != nil {
			t.Errorf("Append of %s: %v", c.id, err)
		}
	}
	closeCommitter(t, g)

	sizes := store.batchSizes()
	if sizes[0] != 1 || len(sizes) > 5 || slices.Max(sizes) > 4 {
		t.Errorf("batch sizes %v: want the first call alone, then batches of at most 4 messages", sizes)
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total != 14 {
		t.Errorf("the store got %d messages in %v, want each of the 14 once", total, sizes)
	}
	for _, c := range calls {
		if !store.has(c.id) {
			t.Errorf("message %s acknowledged but not stored", c.id)
		}
	}
	if m, b := depth.depth(); m != 0 || b != 0 {
		t.Errorf("queue depth after the last write: %d messages, %d bytes; want 0", m, b)
	}
}

// A call is never split: a batch closes before a call that would overflow it, and
// a call larger than the batch limit is written alone.
func TestGroupCommitKeepsEachCallWhole(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxBatchMessages: 3})
	a := appendAsync(t.Context(), g, "a1", "a2")
	waitQueued(t, depth, 3)
	b := appendAsync(t.Context(), g, "b1", "b2", "b3", "b4", "b5")
	waitQueued(t, depth, 8)
	c := appendAsync(t.Context(), g, "c1")
	waitQueued(t, depth, 9)
	store.open()
	for _, call := range []call{first, a, b, c} {
		if err := <-call.done; err != nil {
			t.Errorf("Append of %s: %v", call.id, err)
		}
	}
	closeCommitter(t, g)
	if got, want := store.batchSizes(), []int{1, 2, 5, 1}; !slices.Equal(got, want) {
		t.Errorf("batch sizes %v, want %v", got, want)
	}
}

func TestGroupCommitBoundsBatchBytes(t *testing.T) {
	store := newGateStore()
	depth := &depthRecorder{}
	// Each test message is well over 300 bytes (estimated), so two exceed 600.
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1, MaxBatchBytes: 600, Metrics: depth})
	defer closeCommitter(t, g)
	first := startBlocked(t, g, store)
	var calls []call
	for i := range 3 {
		calls = append(calls, appendAsync(t.Context(), g, "m"+strconv.Itoa(i)))
		waitQueued(t, depth, i+2)
	}
	store.open()
	for _, c := range append(calls, first) {
		if err := <-c.done; err != nil {
			t.Errorf("Append of %s: %v", c.id, err)
		}
	}
	if got, want := store.batchSizes(), []int{1, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("batch sizes %v, want one message per batch under a 600-byte limit", got)
	}
}

var errPoison = errors.New("the store refuses this message")

// poisonOn fails every batch holding id with err.
func poisonOn(id string, err error) func([]string) error {
	return func(ids []string) error {
		if slices.Contains(ids, id) {
			return err
		}
		return nil
	}
}

func TestGroupCommitFailsOnlyTheCallsTheStoreRefuses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1})
	store.fail = poisonOn("poison", errPoison)
	a := appendAsync(t.Context(), g, "a")
	waitQueued(t, depth, 2)
	p := appendAsync(t.Context(), g, "poison", "p2")
	waitQueued(t, depth, 4)
	c := appendAsync(t.Context(), g, "c")
	waitQueued(t, depth, 5)
	store.open()

	for _, ok := range []call{first, a, c} {
		if err := <-ok.done; err != nil {
			t.Errorf("Append of %s, batched with a refused message: %v, want success", ok.id, err)
		}
	}
	if err := <-p.done; !errors.Is(err, errPoison) {
		t.Errorf("Append of the refused message: %v, want the store's error", err)
	}
	closeCommitter(t, g)
	for id, want := range map[string]bool{"a": true, "c": true, "poison": false, "p2": false} {
		if store.has(id) != want {
			t.Errorf("message %s stored: %t, want %t", id, !want, want)
		}
	}
}

// batchCounter stamps each batch's messages with the batch's number as their
// stored time, so a test sees which write stamped them.
type batchCounter struct{ batches atomic.Int64 }

func (c *batchCounter) StampBatch(batch []domain.Message) {
	n := c.batches.Add(1)
	for i := range batch {
		batch[i].UpdatedAt = time.Unix(n, 0)
	}
}

// Messages are stamped when their batch is written, not when they were queued,
// and again when a refused batch is retried call by call; the callers' slices
// are left alone.
func TestGroupCommitStampsEachBatchJustBeforeItsWrite(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, Stamper: &batchCounter{}})
	store.fail = poisonOn("poison", errPoison)
	queued := msgs("a")
	a := call{id: "a", done: make(chan error, 1)}
	go func() { a.done <- g.Append(t.Context(), queued) }()
	waitQueued(t, depth, 2)
	p := appendAsync(t.Context(), g, "poison")
	waitQueued(t, depth, 3)
	store.open()
	for _, c := range []call{first, a, p} {
		<-c.done
	}
	closeCommitter(t, g)

	// first is batch 1; a and poison are batch 2, refused, then retried alone (3, 4).
	for id, want := range map[string]int64{"first": 1, "a": 3} {
		if m, _ := store.message(id); m.UpdatedAt.Unix() != want {
			t.Errorf("%s stored with the stamp of batch %d, want %d", id, m.UpdatedAt.Unix(), want)
		}
	}
	if !queued[0].UpdatedAt.IsZero() {
		t.Errorf("the caller's message was changed: updated_at %v", queued[0].UpdatedAt)
	}
}

// A transient failure fails every call of the batch (a retry would fail too),
// and no call of another batch.
func TestGroupCommitTransientFailureFailsTheWholeBatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxBatchMessages: 3})
	outage := fmt.Errorf("connection refused: %w", ports.ErrUnavailable)
	store.fail = poisonOn("poison", outage)
	var batch []call
	for i, id := range []string{"a", "poison", "c"} {
		batch = append(batch, appendAsync(t.Context(), g, id))
		waitQueued(t, depth, i+2)
	}
	next := appendAsync(t.Context(), g, "next")
	waitQueued(t, depth, 5)
	store.open()
	for _, c := range batch {
		if err := <-c.done; !errors.Is(err, ports.ErrUnavailable) {
			t.Errorf("Append of %s in the failed batch: %v, want ErrUnavailable", c.id, err)
		}
	}
	if err := <-first.done; err != nil {
		t.Errorf("Append of %s in an earlier batch: %v", first.id, err)
	}
	// What waited behind the failed batch fails at once instead of waiting out
	// the store's timeout again.
	if err := <-next.done; !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append of %s queued behind an outage: %v, want ErrUnavailable", next.id, err)
	}
	// New calls go to the store again: recovery needs no restart.
	if err := g.Append(t.Context(), msgs("recovered")); err != nil {
		t.Errorf("Append after the outage: %v", err)
	}
	closeCommitter(t, g)
	if got, want := store.batchSizes(), []int{1, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("batch sizes %v, want %v (no call-by-call retry of an outage, nothing written for refused calls)", got, want)
	}
}

// testStamper stamps batches as stored at testNow.
func testStamper() *app.StoredTimeStamper {
	return &app.StoredTimeStamper{Policy: domain.DefaultPolicy(), Clock: fixedClock{testNow}}
}

// queuedIngester writes through g and checks Idempotency-Keys in lookup.
func queuedIngester(t *testing.T, g *app.GroupCommitter, lookup ports.MessageLookup) *app.Ingester {
	t.Helper()
	in, err := app.NewIngesterWith(app.IngestPorts{Queue: g, Lookup: lookup, Clock: fixedClock{testNow}},
		domain.DefaultPolicy(), app.DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// A busy store (ErrOverloaded) fails its batch but is not down: nothing queued
// behind it is drained, and no probe is needed.
func TestGroupCommitBusyStoreIsNotDown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1})
	store.fail = poisonOn("first", fmt.Errorf("queue full: %w", ports.ErrOverloaded))
	queued := appendAsync(t.Context(), g, "queued")
	waitQueued(t, depth, 2)
	store.open()
	if err := <-first.done; !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("the busy batch: %v, want ErrOverloaded", err)
	}
	if err := <-queued.done; err != nil {
		t.Errorf("a call queued behind a busy batch: %v, want it written", err)
	}
	closeCommitter(t, g)
}

// reservationRecorder is a QueueMetrics that also keeps the reserved room.
type reservationRecorder struct {
	depthRecorder
	reservedMessages int
	reservedBytes    int64
}

func (r *reservationRecorder) ObserveReserved(messages int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reservedMessages, r.reservedBytes = messages, bytes
}

func (r *reservationRecorder) reserved() (int, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reservedMessages, r.reservedBytes
}

// The room reserved by admitted requests is reported as it changes: the queue's
// bound counts it, so the depth alone can look below the bound while it refuses.
func TestGroupCommitReportsReservedRoom(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	metrics, store := &reservationRecorder{}, newGateStore()
	store.open()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1, Metrics: metrics})
	want := func(when string, messages int, bytes int64) {
		t.Helper()
		if m, b := metrics.reserved(); m != messages || b != bytes {
			t.Errorf("%s: reserved %d messages, %d bytes; want %d, %d", when, m, b, messages, bytes)
		}
	}
	first, err := g.Reserve(1000)
	if err != nil {
		t.Fatal(err)
	}
	second, err := g.Reserve(500)
	if err != nil {
		t.Fatal(err)
	}
	want("after two reservations", 2, 1500)
	first.Shrink(200)
	want("after a shrink", 2, 700)
	second.Cancel()
	want("after a cancel", 1, 200)
	if err := first.Append(t.Context(), msgs("spent")); err != nil {
		t.Fatal(err)
	}
	want("after an append through the reservation", 0, 0)
	if !store.has("spent") {
		t.Error("the append through the reservation was not stored")
	}
	closeCommitter(t, g)
}

// reportLog is a QueueMetrics that keeps every report of the queue and the
// reserved room, in order.
type reportLog struct {
	mu      sync.Mutex
	held    int
	reports [][2]int // messages held, messages reserved
}

func (l *reportLog) ObserveQueue(messages int, _ int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = messages
}

func (l *reportLog) ObserveReserved(messages int, _ int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reports = append(l.reports, [2]int{l.held, messages})
}

// A reservation becoming queued messages is one report: a scrape between two
// would see neither, a queue emptier than it is.
func TestGroupCommitReportsAReservationQueuedAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	metrics, store := &reportLog{}, newGateStore()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1, Metrics: metrics})
	r, err := g.Reserve(1000)
	if err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() { appended <- r.Append(t.Context(), msgs("queued")) }()
	conformance.WaitFor(t, "the messages to be queued", func() bool {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return metrics.held > 0
	})
	metrics.mu.Lock()
	reports := slices.Clone(metrics.reports)
	metrics.mu.Unlock()
	want := [][2]int{{0, 1}, {1, 0}}
	if !slices.Equal(reports, want) {
		t.Errorf("reports (held, reserved) %v, want %v", reports, want)
	}
	store.open()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	closeCommitter(t, g)
}

// enteredStore waits until c's batch is at the store's gate.
func enteredStore(t *testing.T, ctx context.Context, store *gateStore, c call) {
	t.Helper()
	select {
	case <-store.entered:
	case err := <-c.done:
		t.Fatalf("Append of %s returned (%v) before reaching the store", c.id, err)
	case <-ctx.Done():
		t.Fatalf("Append of %s never reached the store", c.id)
	}
}

func TestGroupCommitRefusesAtOnceWhenTheQueueIsFull(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxQueueMessages: 3})
	queued := appendAsync(t.Context(), g, "q1", "q2")
	waitQueued(t, depth, 3)

	// The store is still blocked: the refusal cannot have waited for it.
	err := g.Append(t.Context(), msgs("over"))
	if !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("Append to a full queue: %v, want ErrOverloaded", err)
	}
	_, bytes := depth.depth()
	if err := g.Append(t.Context(), msgs("also-over")); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("second Append to a full queue: %v, want ErrOverloaded", err)
	}
	if m, b := depth.depth(); m != 3 || b != bytes {
		t.Errorf("refused calls changed the queue to %d messages, %d bytes", m, b)
	}
	select {
	case <-store.gate:
		t.Fatal("the store was released before the refusal")
	default:
	}
	store.open()
	for _, c := range []call{first, queued} {
		if err := <-c.done; err != nil {
			t.Errorf("Append of %s: %v", c.id, err)
		}
	}
	if store.has("over") || store.has("also-over") {
		t.Error("a refused message was stored")
	}
	// Room again.
	if err := g.Append(t.Context(), msgs("later")); err != nil {
		t.Errorf("Append once the queue drained: %v", err)
	}
	closeCommitter(t, g)
}

// The Ingester asks a full queue first, so a refused request costs no decoding:
// even an invalid body gets ErrOverloaded, not a validation error.
func TestIngesterRefusesBeforeDecodingWhenTheQueueIsFull(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	store := newGateStore()
	depth := &depthRecorder{}
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1, MaxQueueMessages: 1, Metrics: depth, Stamper: testStamper()})
	ingester := queuedIngester(t, g, &recordingStore{})
	first := startBlocked(t, g, store)
	_, err := ingester.Submit(t.Context(), acmeLive, draftsOf("{}"), "")
	if !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Submit to a full queue: %v, want ErrOverloaded before any decoding", err)
	}
	store.open()
	if err := <-first.done; err != nil {
		t.Fatal(err)
	}
	_, err = ingester.Submit(t.Context(), acmeLive, draftsOf("{}"), "")
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) {
		t.Errorf("Submit of a bad body with room in the queue: %v, want a validation error", err)
	}
	closeCommitter(t, g)
}

// A submission admitted while the queue had room is not refused once decoded,
// although the queue filled meanwhile: refusals come from the headers only.
func TestAdmittedSubmissionIsQueuedEvenIfTheQueueFilledMeanwhile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxQueueMessages: 2, Stamper: testStamper()})
	ingester := queuedIngester(t, g, &recordingStore{})
	body := []byte("[" + submitted + "," + submitted + "]")
	admitted, err := ingester.Admit(acmeLive, app.IdempotencyKey{}, int64(len(body)))
	if err != nil {
		t.Fatalf("Admit with room for one more message: %v", err)
	}
	// The reservation counts: no one else gets in, not even a single message. (A
	// deadline, so that a queued Append fails the test instead of hanging it.)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := g.Append(ctx, msgs("late")); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Append with the last room reserved: %v, want ErrOverloaded", err)
	}
	if _, err := ingester.Admit(acmeLive, app.IdempotencyKey{}, 1); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Admit with the last room reserved: %v, want ErrOverloaded", err)
	}
	// Two messages join the first: three, past the bound of two, as admitted.
	result := make(chan error, 1)
	go func() {
		_, err := admitted.Submit(t.Context(), draftsOf(string(body)))
		result <- err
	}()
	waitQueued(t, depth, 3)
	store.open()
	if err := <-result; err != nil {
		t.Errorf("Submit of an admitted submission: %v", err)
	}
	if err := <-first.done; err != nil {
		t.Fatal(err)
	}
	if got := store.batchSizes(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("batch sizes %v, want [1 2]", got)
	}
	closeCommitter(t, g)
}

func TestReservationsBoundTheQueue(t *testing.T) {
	g := app.NewGroupCommitter(newGateStore(), app.GroupCommitOptions{MaxQueueMessages: 10, MaxQueueBytes: 1000})
	// Anything fits an empty queue, even more than the whole of it.
	huge, err := g.Reserve(5000)
	if err != nil {
		t.Fatalf("Reserve into an empty queue: %v", err)
	}
	if _, err := g.Reserve(0); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Reserve behind 5000 reserved bytes of 1000: %v, want ErrOverloaded", err)
	}
	huge.Cancel()
	huge.Cancel() // a second Cancel must not give back room held by others
	var held []*app.Reservation
	for range 2 {
		r, err := g.Reserve(400)
		if err != nil {
			t.Fatalf("Reserve 400 bytes with %d reservations: %v", len(held), err)
		}
		held = append(held, r)
	}
	if _, err := g.Reserve(201); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Reserve 201 bytes with 800 of 1000 reserved: %v, want ErrOverloaded", err)
	}
	for range 8 { // one message each: 2 + 8 = 10
		r, err := g.Reserve(-1)
		if err != nil {
			t.Fatalf("Reserve of an unknown length with %d reservations: %v", len(held), err)
		}
		held = append(held, r)
	}
	if _, err := g.Reserve(-1); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("an 11th reservation with room for 10 messages: %v, want ErrOverloaded", err)
	}
	held[0].Cancel()
	if r, err := g.Reserve(-1); err != nil {
		t.Errorf("Reserve after a Cancel: %v", err)
	} else {
		r.Cancel()
	}
	for _, r := range held[1:] {
		r.Cancel()
	}
	closeCommitter(t, g)
}

// A chunked body reserves the body limit until it is read, then what it holds.
func TestReservationShrinksToTheBodyRead(t *testing.T) {
	g := app.NewGroupCommitter(newGateStore(), app.GroupCommitOptions{MaxQueueBytes: 1000})
	chunked, err := g.Reserve(5000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reserve(100); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Reserve behind 5000 reserved bytes of 1000: %v, want ErrOverloaded", err)
	}
	chunked.Shrink(200)
	chunked.Shrink(4000) // never raises
	next, err := g.Reserve(800)
	if err != nil {
		t.Fatalf("Reserve 800 bytes beside a reservation shrunk to 200 of 1000: %v", err)
	}
	if _, err := g.Reserve(1); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Reserve with 1000 of 1000 reserved: %v, want ErrOverloaded", err)
	}
	chunked.Cancel()
	next.Cancel()
	closeCommitter(t, g)
}

// A reservation is spent once: an Append through a cancelled one is checked as any
// other, and a Cancel after Append gives nothing back.
func TestReservationIsSpentOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxQueueMessages: 3})
	cancelled, err := g.Reserve(10)
	if err != nil {
		t.Fatal(err)
	}
	cancelled.Cancel()
	if err := cancelled.Append(t.Context(), msgs("a", "b", "c")); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Append of 3 messages through a cancelled reservation behind 1 of 3: %v, want ErrOverloaded", err)
	}
	used, err := g.Reserve(10)
	if err != nil {
		t.Fatalf("Reserve after a refused Append: %v", err)
	}
	queued := make(chan error, 1)
	go func() { queued <- used.Append(t.Context(), msgs("d")) }()
	waitQueued(t, depth, 2)
	used.Cancel() // spent: the queue holds 2 of 3, so one more message fits, not two
	if _, err := g.Reserve(10); err != nil {
		t.Errorf("Reserve with 2 of 3 held: %v", err)
	}
	if _, err := g.Reserve(10); !errors.Is(err, ports.ErrOverloaded) {
		t.Errorf("Reserve with 2 held and 1 reserved of 3: %v, want ErrOverloaded", err)
	}
	store.open()
	for _, done := range []<-chan error{first.done, queued} {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if store.has("a") || !store.has("d") {
		t.Error("stored the refused call or lost the admitted one")
	}
	closeCommitter(t, g)
}

// A call larger than the whole queue still gets through, alone, so that it is not
// refused forever; memory stays bounded by the larger of the two.
func TestGroupCommitAdmitsAnOversizedCallIntoAnEmptyQueue(t *testing.T) {
	store := newGateStore()
	store.open()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{MaxQueueMessages: 2})
	defer closeCommitter(t, g)
	if err := g.Append(t.Context(), msgs("a", "b", "c")); err != nil {
		t.Fatalf("Append of 3 messages to an empty queue of 2: %v", err)
	}
}

func TestGroupCommitCallerGivesUpWhileQueued(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1})
	ctx, cancel := context.WithCancel(t.Context())
	gone := appendAsync(ctx, g, "gone")
	waitQueued(t, depth, 2)
	cancel()
	err := <-gone.done
	if !errors.Is(err, ports.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Append whose ctx ended while queued: %v, want ErrUnavailable and context.Canceled", err)
	}
	waitQueued(t, depth, 1)
	store.open()
	if err := <-first.done; err != nil {
		t.Errorf("Append of the first call: %v", err)
	}
	closeCommitter(t, g)
	if store.has("gone") {
		t.Error("the message of a caller that gave up while queued was written")
	}
	if got := store.batchSizes(); !slices.Equal(got, []int{1}) {
		t.Errorf("batch sizes %v, want only the first call's", got)
	}
}

// A request still queued after MaxWait is refused as unavailable, nothing of it
// written, while the write that had started is waited for: a store that falls
// behind refuses before its clients give up.
func TestGroupCommitRefusesWhatWaitsTooLong(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1, MaxWait: 50 * time.Millisecond})
	late := appendAsync(t.Context(), g, "late")
	if err := <-late.done; !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append queued past MaxWait: %v, want ErrUnavailable", err)
	}
	waitQueued(t, depth, 1)
	store.open()
	if err := <-first.done; err != nil {
		t.Errorf("Append whose write had started: %v, want its success however long it took", err)
	}
	closeCommitter(t, g)
	if store.has("late") {
		t.Error("the message of a call refused for waiting was written")
	}
}

// Once its batch is being written, a caller whose ctx ends gets the outcome.
func TestGroupCommitCallerGivesUpDuringTheWrite(t *testing.T) {
	store := newGateStore()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1})
	defer closeCommitter(t, g)
	ctx, cancel := context.WithCancel(t.Context())
	c := appendAsync(ctx, g, "writing")
	<-store.entered
	cancel()
	store.open()
	if err := <-c.done; err != nil {
		t.Errorf("Append whose batch was written: %v, want the write's success", err)
	}
	if !store.has("writing") {
		t.Error("message not stored")
	}
}

func TestGroupCommitRefusesAnEndedContext(t *testing.T) {
	store := newGateStore()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{})
	defer closeCommitter(t, g)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Append(ctx, msgs("late")); !errors.Is(err, context.Canceled) || !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append with an ended ctx: %v", err)
	}
	if err := g.Append(ctx, nil); err != nil {
		t.Errorf("Append of nothing: %v", err)
	}
}

func TestGroupCommitCloseFlushesTheQueue(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	store := newGateStore()
	store.open()
	depth := &depthRecorder{}
	// A linger of an hour: only Close can make these batches due.
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 2, Linger: time.Hour, Metrics: depth})
	var queued []call
	for i := range 5 {
		queued = append(queued, appendAsync(t.Context(), g, "q"+strconv.Itoa(i)))
	}
	waitQueued(t, depth, 5)
	if got := store.batchSizes(); len(got) != 0 {
		t.Fatalf("batches %v written before they were due", got)
	}
	closeCommitter(t, g)
	for _, c := range queued {
		if err := <-c.done; err != nil || !store.has(c.id) {
			t.Errorf("Append of %s queued before Close: %v, stored %t", c.id, err, store.has(c.id))
		}
	}
	if err := g.Append(t.Context(), msgs("after-close")); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append after Close: %v, want ErrUnavailable", err)
	}
	if store.has("after-close") {
		t.Error("a message submitted after Close was stored")
	}
}

// Close gives up when its ctx ends: writes in flight are aborted and queued calls
// fail as unavailable, never as success.
func TestGroupCommitCloseGivesUpWithItsContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g, _, depth, first := blockedCommitter(t, app.GroupCommitOptions{Writers: 1})
	queued := appendAsync(t.Context(), g, "queued")
	waitQueued(t, depth, 2)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with an ended ctx: %v, want context.Canceled", err)
	}
	for _, c := range []call{first, queued} {
		if err := <-c.done; !errors.Is(err, ports.ErrUnavailable) {
			t.Errorf("Append of %s cut off by Close: %v, want ErrUnavailable", c.id, err)
		}
	}
	if err := g.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestGroupCommitNeverUsedClosesAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := app.NewGroupCommitter(newGateStore(), app.GroupCommitOptions{})
	closeCommitter(t, g)
	if err := g.Append(t.Context(), msgs("late")); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append after Close: %v, want ErrUnavailable", err)
	}
}

// Many callers at once under the race detector: every acknowledged message is
// stored exactly as sent, and the queue ends empty.
func TestGroupCommitUnderConcurrency(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	store := newGateStore()
	store.open()
	depth := &depthRecorder{}
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{MaxBatchMessages: 16, Metrics: depth})
	var wg sync.WaitGroup
	errs := make(chan error, 64*20)
	for w := range 64 {
		wg.Go(func() {
			for i := range 20 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := g.Append(t.Context(), msgs(id)); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				} else if !store.has(id) {
					errs <- fmt.Errorf("%s acknowledged before it was stored", id)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	closeCommitter(t, g)
	if m, b := depth.depth(); m != 0 || b != 0 {
		t.Errorf("queue depth at the end: %d messages, %d bytes", m, b)
	}
}

// graphStore is a gateStore that the fx graph can take as its ports.MessageStore.
type graphStore struct {
	*gateStore
	recordingStore
}

func (s *graphStore) Append(ctx context.Context, msgs []domain.Message) error {
	return s.gateStore.Append(ctx, msgs)
}

// queueMetrics is the graph's Metrics; it also implements app.QueueMetrics.
type queueMetrics struct{ depthRecorder }

func (*queueMetrics) ObserveAppend(int, time.Duration) {}
func (*queueMetrics) ObserveStoreError(string, string) {}

// The fx module puts the committer in front of the store, reports its queue to
// the graph's Metrics and flushes it on stop.
func TestModuleWritesThroughGroupCommit(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run("enabled="+strconv.FormatBool(enabled), func(t *testing.T) {
			store := &graphStore{gateStore: newGateStore()}
			metrics := &queueMetrics{}
			cfg := app.DefaultConfig()
			cfg.VisibilityDelay = 0
			cfg.GroupCommit.Enabled = enabled
			cfg.GroupCommit.Writers = 1
			var ingester *app.Ingester
			svc := fxtest.New(t, appGraph(store, cfg, &ingester),
				fx.Supply(fx.Annotate(metrics, fx.As(new(app.Metrics)))))
			svc.RequireStart()

			body := strings.Replace(submitted, "1714564800", strconv.FormatInt(time.Now().Unix(), 10), 1)
			submit := func() chan error {
				done := make(chan error, 1)
				go func() {
					_, err := ingester.Submit(context.Background(), acmeLive, draftsOf(body), "")
					done <- err
				}()
				return done
			}
			calls := []chan error{submit()}
			<-store.entered
			calls = append(calls, submit(), submit(), submit())
			if enabled {
				waitQueued(t, &metrics.depthRecorder, 4)
			} else {
				for range 3 {
					<-store.entered // each call writes on its own
				}
			}
			store.open()
			for _, done := range calls {
				if err := <-done; err != nil {
					t.Errorf("Submit: %v", err)
				}
			}
			svc.RequireStop()
			want := []int{1, 3}
			if !enabled {
				want = []int{1, 1, 1, 1}
			}
			if got := store.batchSizes(); !slices.Equal(got, want) {
				t.Errorf("store batches %v, want %v", got, want)
			}
		})
	}
}

// Through the fx module, a queued message's stored time (updated_at) and so its
// visible time are those of its write: time spent in the queue does not eat into
// the visibility delay, which only the store's read lag may use.
func TestModuleStampsMessagesWhenTheyAreWritten(t *testing.T) {
	store := &graphStore{gateStore: newGateStore()}
	metrics := &queueMetrics{}
	clock := conformance.NewFakeClock(testNow)
	cfg := app.DefaultConfig()
	cfg.GroupCommit.Writers = 1
	var ingester *app.Ingester
	svc := fxtest.New(t, appGraph(store, cfg, &ingester),
		fx.Supply(fx.Annotate(metrics, fx.As(new(app.Metrics)))),
		fx.Decorate(func(ports.Clock) ports.Clock { return clock }))
	svc.RequireStart()
	defer svc.RequireStop()

	submit := func() chan app.SubmitResult {
		done := make(chan app.SubmitResult, 1)
		go func() {
			result, err := ingester.Submit(context.Background(), acmeLive, draftsOf(submitted), "")
			if err != nil {
				t.Errorf("Submit: %v", err)
			}
			done <- result
		}()
		return done
	}
	first := submit()
	<-store.entered
	queued := submit()
	waitQueued(t, &metrics.depthRecorder, 2)
	written := testNow.Add(time.Minute)
	clock.Set(written)
	store.open()
	<-first
	result := <-queued
	if len(result.Identities) != 1 {
		t.Fatalf("identities %+v", result.Identities)
	}
	m, _ := store.gateStore.message(result.Identities[0].ID)
	if !m.UpdatedAt.Equal(written) || !m.VisibleAt.Equal(written.Add(cfg.VisibilityDelay)) {
		t.Errorf("stored with updated_at %v and visible from %v, want %v and %v (the write's time)",
			m.UpdatedAt, m.VisibleAt, written, written.Add(cfg.VisibilityDelay))
	}
}

package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Defaults of GroupCommitOptions, measured with cmd/reqlog-bench (docs/benchmarks.md).
const (
	DefaultGroupBatchMessages = 500
	DefaultGroupBatchBytes    = 4 << 20
	DefaultGroupLinger        = 0
	DefaultGroupQueueMessages = 10_000
	DefaultGroupQueueBytes    = 64 << 20
	DefaultGroupWriters       = 4
	// DefaultGroupMaxWait bounds how long a request waits in the queue before
	// its write starts: past it the store is not keeping up, and a refusal the
	// client can retry beats an answer after the client has given up.
	DefaultGroupMaxWait = 2 * time.Second
)

// Upper bounds the configuration accepts: beyond them a setting is a typo.
const (
	maxGroupLinger  = time.Second
	maxGroupWriters = 256
)

// GroupCommitOptions bound a GroupCommitter's batches and queue. A zero or negative
// field takes its default.
type GroupCommitOptions struct {
	// MaxBatchMessages and MaxBatchBytes bound one store Append. A request larger
	// than either is written alone, never split.
	MaxBatchMessages int
	MaxBatchBytes    int64
	// Linger is how long a batch waits for more requests after its first one
	// arrived, unless it fills up sooner; 0 writes at once. Requests that arrive
	// while every writer is busy are coalesced either way.
	Linger time.Duration
	// MaxQueueMessages and MaxQueueBytes bound what the committer holds, queued or
	// being written, and reserves; beyond them Append and Reserve fail at once
	// with ports.ErrOverloaded. A request larger than the whole queue is accepted
	// when the queue is empty. Appends through a Reservation may go past them.
	MaxQueueMessages int
	MaxQueueBytes    int64
	// Writers is how many batches may be written to the store at the same time.
	Writers int
	// MaxWait, when positive, is how long a request may wait in the queue for
	// its write to start; one still waiting then is withdrawn and fails with
	// ports.ErrUnavailable, nothing of it written. A write that has started is
	// always waited for: its outcome is the truth. 0 waits as long as the
	// caller's context allows (DefaultGroupCommitOptions sets
	// DefaultGroupMaxWait). With MaxWait, a batch is also kept to the bytes the
	// store wrote in MaxWait/paceShare at the pace of its latest write of at
	// least MaxBatchBytes/paceFloor, and never below that, so that a write,
	// once started, ends soon too: a cold or overloaded store took seconds for
	// a full batch, and its requests outlived their clients.
	MaxWait time.Duration
	// Clock measures how long the store's writes take (the pace below); nil
	// is the system clock.
	Clock ports.Clock
	// Stamper, if set, may update a batch's messages (copies of the callers')
	// just before they are written. The fx module stamps their stored time there,
	// so a message becomes visible a fixed delay after its write, however long it
	// waited in the queue.
	Stamper BatchStamper
	// Metrics, if set, is told the queue's depth whenever it changes.
	Metrics QueueMetrics
}

// DefaultGroupCommitOptions returns the defaults of every option.
func DefaultGroupCommitOptions() GroupCommitOptions {
	return GroupCommitOptions{MaxWait: DefaultGroupMaxWait}.withDefaults()
}

func (o GroupCommitOptions) withDefaults() GroupCommitOptions {
	setDefault(&o.MaxBatchMessages, DefaultGroupBatchMessages)
	setDefault(&o.MaxBatchBytes, DefaultGroupBatchBytes)
	setDefault(&o.MaxQueueMessages, DefaultGroupQueueMessages)
	setDefault(&o.MaxQueueBytes, DefaultGroupQueueBytes)
	setDefault(&o.Writers, DefaultGroupWriters)
	o.MaxWait = max(o.MaxWait, 0)
	o.Linger = max(o.Linger, 0)
	return o
}

func setDefault[T int | int64](field *T, value T) {
	if *field <= 0 {
		*field = value
	}
}

// BatchStamper updates a batch's messages just before a GroupCommitter writes them.
type BatchStamper interface {
	StampBatch(batch []domain.Message)
}

// StoredTimeStamper is the BatchStamper of the ingest path: it stamps a batch as
// stored now under Policy (domain.Policy.StampStored).
type StoredTimeStamper struct {
	Policy domain.Policy
	Clock  ports.Clock
}

// StampBatch implements BatchStamper.
func (s *StoredTimeStamper) StampBatch(batch []domain.Message) {
	s.Policy.StampStored(batch, s.Clock.Now())
}

// QueueMetrics receives the depth of a GroupCommitter's queue: the messages and
// their estimated bytes held, queued or being written. The Metrics of the fx graph
// gets it when it implements this too; the batch sizes reach Metrics.ObserveAppend,
// since the committer writes through the observed store.
// It is called with the committer's lock held: it must not block or call back.
type QueueMetrics interface {
	ObserveQueue(messages int, bytes int64)
}

// ReservationMetrics, when the QueueMetrics implements it too, receives the room
// reserved for admitted requests whose messages are not queued yet: being read,
// waiting for or holding a decoder, or looking up their Idempotency-Key. The
// queue's bound counts it with the depth, so without it a queue refusing every
// POST can look below its bound. It is called as QueueMetrics is.
type ReservationMetrics interface {
	ObserveReserved(messages int, bytes int64)
}

// GroupCommitter is a ports.MessageWriter in front of another: it coalesces the
// messages of concurrent Append calls into store batches bounded by count and
// bytes, and answers each call once the batch holding its messages was written, with
// that batch's outcome. A batch that fails with a transient error (ErrUnavailable,
// ErrOverloaded, a deadline) fails every call in it; one that fails otherwise is
// retried call by call, so that a call whose messages the store refuses cannot fail
// the others (Append is idempotent, so the retry stores nothing twice).
//
// Its queue is bounded: when it holds MaxQueueMessages or MaxQueueBytes, Append
// fails at once with an error wrapping ports.ErrOverloaded, and so does Reserve,
// which lets a caller be refused before it decodes anything. When a batch finds
// the store unavailable, what is queued behind it fails at once with
// ports.ErrUnavailable rather than wait out the store's timeout in turn; keeping
// new requests off a down store is a Breaker's part. A caller whose ctx ends
// while its messages wait is taken out of the queue (they will not be written) and
// gets an error wrapping ports.ErrUnavailable and ctx.Err(); once its batch is being
// written, it waits for the outcome, so Append keeps no reference to msgs after it
// returns. Writers start with the first Append; Close flushes and stops them.
type GroupCommitter struct {
	store           ports.MessageWriter
	opts            GroupCommitOptions
	reservedMetrics ReservationMetrics // opts.Metrics, if it reports reservations

	mu       sync.Mutex
	queue    []*commitRequest // oldest first; nil where a caller gave up
	waiting  load             // in queue
	held     load             // in queue or being written
	reserved load             // held for admitted requests whose messages are not queued yet
	taken    uint64           // batches taken from the queue, numbering them
	settled  uint64           // the number of the latest batch to finish, or of an older one
	started  bool
	closed   bool
	pace     float64 // bytes per second of the latest successful write; 0 until one

	wake    chan struct{} // a token: the queue or closed changed
	writeTo context.Context
	abort   context.CancelFunc
	writers sync.WaitGroup
	drained chan struct{} // closed when every writer has returned
}

var _ ports.MessageWriter = (*GroupCommitter)(nil)

type load struct {
	messages int
	bytes    int64
}

func (l *load) add(o load) { l.messages += o.messages; l.bytes += o.bytes }
func (l *load) sub(o load) { l.messages -= o.messages; l.bytes -= o.bytes }

type commitRequest struct {
	msgs     []domain.Message
	size     load
	queuedAt time.Time
	done     chan error // buffered: a writer never waits for the caller
}

// NewGroupCommitter returns a committer writing to store; zero options take
// their defaults.
func NewGroupCommitter(store ports.MessageWriter, opts GroupCommitOptions) *GroupCommitter {
	ctx, cancel := context.WithCancel(context.Background())
	g := &GroupCommitter{store: store, opts: opts.withDefaults(), wake: make(chan struct{}, 1),
		writeTo: ctx, abort: cancel, drained: make(chan struct{})}
	g.reservedMetrics, _ = opts.Metrics.(ReservationMetrics)
	return g
}

func (g *GroupCommitter) now() time.Time {
	if g.opts.Clock != nil {
		return g.opts.Clock.Now()
	}
	return time.Now()
}

// Stamps reports whether the committer stamps each batch before writing it
// (GroupCommitOptions.Stamper).
func (g *GroupCommitter) Stamps() bool { return g.opts.Stamper != nil }

// Append queues msgs for the next batch and waits until it was written.
func (g *GroupCommitter) Append(ctx context.Context, msgs []domain.Message) error {
	return g.append(ctx, msgs, nil)
}

// append is Append, in place of room reserved by r when r is not nil; r is
// spent either way.
func (g *GroupCommitter) append(ctx context.Context, msgs []domain.Message, r *Reservation) error {
	if len(msgs) == 0 {
		r.Cancel()
		return nil
	}
	if err := ctx.Err(); err != nil {
		r.Cancel()
		return callerGone(err)
	}
	req := &commitRequest{msgs: msgs, size: sizeOf(msgs), done: make(chan error, 1)}
	if err := g.enqueue(req, r); err != nil {
		return err
	}
	var waitedTooLong <-chan time.Time
	if g.opts.MaxWait > 0 {
		waited := time.NewTimer(g.opts.MaxWait)
		defer waited.Stop()
		waitedTooLong = waited.C
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		if g.withdraw(req) {
			return callerGone(ctx.Err())
		}
	case <-waitedTooLong:
		if g.withdraw(req) {
			return fmt.Errorf("group commit: waited %s in the queue without the store taking the write: %w",
				g.opts.MaxWait, ports.ErrUnavailable)
		}
	}
	return <-req.done // being written: the outcome is the truth
}

func callerGone(err error) error {
	return fmt.Errorf("group commit: the caller gave up before the store write: %w: %w", ports.ErrUnavailable, err)
}

func (g *GroupCommitter) enqueue(req *commitRequest, r *Reservation) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.observe() // once, whether the reservation became queued messages or was given back
	reserved := r != nil && r.release()
	if g.closed {
		return errShuttingDown
	}
	if !reserved && !g.fits(req.size) {
		return g.overloaded()
	}
	if !g.started {
		g.start()
	}
	req.queuedAt = time.Now()
	g.queue = append(g.queue, req)
	g.waiting.add(req.size)
	g.held.add(req.size)
	g.signal()
	return nil
}

var errShuttingDown = fmt.Errorf("group commit: shutting down: %w", ports.ErrUnavailable)

// fits reports whether size may join what the queue holds and has reserved; g.mu
// is held. Anything fits an empty queue, so a request larger than the whole queue
// is not refused forever.
func (g *GroupCommitter) fits(size load) bool {
	total := g.held
	total.add(g.reserved)
	return total.messages == 0 || (total.messages+size.messages <= g.opts.MaxQueueMessages &&
		total.bytes+size.bytes <= g.opts.MaxQueueBytes)
}

// overloaded is the refusal of a full queue; g.mu is held.
func (g *GroupCommitter) overloaded() error {
	return fmt.Errorf("group commit: %d messages (%d bytes) already wait for the store, and %d bytes are reserved: %w",
		g.held.messages, g.held.bytes, g.reserved.bytes, ports.ErrOverloaded)
}

// Reservation is room in a GroupCommitter's queue held for a request that is still
// to be read and decoded. A request is refused for load when it arrives, from its
// headers, or not at all: it does not wait for a decoder, spend one and then learn
// that the queue filled meanwhile.
type Reservation struct {
	g    *GroupCommitter
	size load
	done bool // appended or cancelled; g.mu guards it
}

// Reserve holds room for a request whose body has at most bodyBytes, counted as
// one message, or fails at once with an error wrapping ports.ErrOverloaded when
// the queue, with what is already reserved, has no room. Appending through the
// reservation is not refused for load: the queue may go past its bounds by what
// the admitted requests turn out to hold beyond their body's length and one
// message each: in bytes, the memory estimate's overhead per message and header
// (domain.EstimatedBytes; about half again of a typical body); in messages, up to
// the batch limit per admitted request. The number of admitted requests
// (AdmissionOptions) keeps both finite.
func (g *GroupCommitter) Reserve(bodyBytes int64) (*Reservation, error) {
	size := load{messages: 1, bytes: max(bodyBytes, 0)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errShuttingDown
	}
	if !g.fits(size) {
		return nil, g.overloaded()
	}
	g.reserved.add(size)
	g.observe()
	return &Reservation{g: g, size: size}, nil
}

// Append writes msgs as GroupCommitter.Append does, in place of the reserved room.
func (r *Reservation) Append(ctx context.Context, msgs []domain.Message) error {
	return r.g.append(ctx, msgs, r)
}

// Shrink lowers the reserved bytes to bodyBytes, once the body turned out shorter
// than reserved (a chunked body reserves the body limit); it never raises them.
// On a nil Reservation it does nothing.
func (r *Reservation) Shrink(bodyBytes int64) {
	if r == nil {
		return
	}
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	if !r.done && bodyBytes < r.size.bytes {
		r.g.reserved.bytes -= r.size.bytes - max(bodyBytes, 0)
		r.size.bytes = max(bodyBytes, 0)
		r.g.observe()
	}
}

// Cancel gives the room back; after Append, a second time, or on a nil
// Reservation, it does nothing.
func (r *Reservation) Cancel() {
	if r == nil {
		return
	}
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	if r.release() {
		r.g.observe()
	}
}

// release gives the room back once, reporting whether it was still held; g.mu is
// held, and the caller reports the change.
func (r *Reservation) release() bool {
	if r.done {
		return false
	}
	r.done = true
	r.g.reserved.sub(r.size)
	return true
}

// start launches the writers; g.mu is held.
func (g *GroupCommitter) start() {
	g.started = true
	g.writers.Add(g.opts.Writers)
	for range g.opts.Writers {
		go g.run()
	}
	go func() {
		g.writers.Wait()
		close(g.drained)
	}()
}

// withdraw takes req out of the queue; false if a writer already took it.
func (g *GroupCommitter) withdraw(req *commitRequest) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, queued := range g.queue {
		if queued == req {
			g.queue[i] = nil
			g.waiting.sub(req.size)
			g.held.sub(req.size)
			g.observe()
			return true
		}
	}
	return false
}

// signal wakes one idle writer, if none is already due to wake.
func (g *GroupCommitter) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// observe reports the queue's depth and reserved room; g.mu is held, so reports
// arrive in order.
func (g *GroupCommitter) observe() {
	if g.opts.Metrics != nil {
		g.opts.Metrics.ObserveQueue(g.held.messages, g.held.bytes)
	}
	if g.reservedMetrics != nil {
		g.reservedMetrics.ObserveReserved(g.reserved.messages, g.reserved.bytes)
	}
}

func (g *GroupCommitter) run() {
	defer g.writers.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var buf []domain.Message
	for {
		batch, number, ok := g.next(timer)
		if !ok {
			return
		}
		buf = g.write(batch, number, buf)
	}
}

// next waits until a batch is due (full, lingered long enough, or shutting down)
// and takes it from the queue, with its number; false once the committer is
// closed and drained.
func (g *GroupCommitter) next(timer *time.Timer) ([]*commitRequest, uint64, bool) {
	for {
		g.mu.Lock()
		g.dropWithdrawn()
		wait := time.Duration(-1) // no timer: wait for a signal
		if len(g.queue) > 0 {
			full := g.waiting.messages >= g.opts.MaxBatchMessages || g.waiting.bytes >= g.opts.MaxBatchBytes
			wait = time.Until(g.queue[0].queuedAt.Add(g.opts.Linger))
			if full || wait <= 0 || g.closed {
				batch := g.take()
				g.taken++
				number := g.taken
				if len(g.queue) > 0 {
					g.signal() // the rest is another writer's
				}
				g.mu.Unlock()
				return batch, number, true
			}
		} else if g.closed {
			g.mu.Unlock()
			g.signal() // pass the news on to the next idle writer
			return nil, 0, false
		}
		g.mu.Unlock()
		if wait < 0 {
			<-g.wake
			continue
		}
		timer.Reset(wait)
		select {
		case <-g.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// dropWithdrawn removes the queue's leading withdrawn entries; g.mu is held.
func (g *GroupCommitter) dropWithdrawn() {
	for len(g.queue) > 0 && g.queue[0] == nil {
		g.queue = g.queue[1:]
	}
}

// paceShare: a batch holds what the store writes in MaxWait/paceShare at its
// latest pace, so a request's queue wait and write together stay within
// 1+1/paceShare MaxWaits (2.5 s by default: inside a client's usual 3 s).
const paceShare = 4

// paceFloor is MaxBatchBytes/paceFloor: the least bytes pacing keeps in a
// batch, and the least a write must carry to set the pace. A small write's
// time is mostly the store's fixed cost per request, which a smaller batch
// does not shorten: pacing on it shrank batches to one request each and cut
// what a slow store acknowledged (a cold cluster took a second for 3 KB).
const paceFloor = 16

// batchBytes is the most bytes of a batch: MaxBatchBytes, or less when the
// store's pace says a batch that large would not be written in
// MaxWait/paceShare; g.mu is held.
func (g *GroupCommitter) batchBytes() int64 {
	if g.opts.MaxWait <= 0 || g.pace <= 0 {
		return g.opts.MaxBatchBytes
	}
	paced := g.pace * (g.opts.MaxWait / paceShare).Seconds()
	return int64(max(min(paced, float64(g.opts.MaxBatchBytes)), float64(g.opts.MaxBatchBytes/paceFloor)))
}

// take removes the oldest requests that fit one batch (at least one); g.mu is held.
func (g *GroupCommitter) take() []*commitRequest {
	var batch []*commitRequest
	var size load
	maxBytes := g.batchBytes()
	for len(g.queue) > 0 {
		req := g.queue[0]
		if req != nil {
			if len(batch) > 0 && (size.messages+req.size.messages > g.opts.MaxBatchMessages ||
				size.bytes+req.size.bytes > maxBytes) {
				break
			}
			batch = append(batch, req)
			size.add(req.size)
			g.waiting.sub(req.size)
		}
		g.queue[0] = nil // the backing array must not keep it alive
		g.queue = g.queue[1:]
	}
	return batch
}

// write stores batch, the number-th taken, in one Append, reusing buf, and
// answers its callers.
func (g *GroupCommitter) write(batch []*commitRequest, number uint64, buf []domain.Message) []domain.Message {
	buf = buf[:0]
	for _, req := range batch {
		buf = append(buf, req.msgs...)
	}
	g.stamp(buf)
	began := g.now()
	err := g.store.Append(g.writeTo, buf)
	took := g.now().Sub(began)
	results := make([]error, len(batch))
	if err != nil && len(batch) > 1 && !ports.KindOf(err).Transient() {
		start := 0
		for i, req := range batch {
			end := start + len(req.msgs)
			g.stamp(buf[start:end:end]) // each retry is a write of its own, later
			results[i] = g.store.Append(g.writeTo, buf[start:end:end])
			start = end
		}
	} else {
		for i := range results {
			results[i] = err
		}
	}
	clear(buf) // nor must the reused buffer
	var failed []*commitRequest
	g.mu.Lock()
	var written int64
	for _, req := range batch {
		g.held.sub(req.size)
		written += req.size.bytes
	}
	if err == nil && took > 0 && written >= g.opts.MaxBatchBytes/paceFloor {
		g.pace = float64(written) / took.Seconds()
	}
	// The store is down: what waits behind this batch would fail the same way,
	// each after the store's own timeout. Fail it now, so its callers get their
	// 503 at once and retry (with the same Idempotency-Key) later. Only the
	// latest batch taken says how the store is: with several writers, an older
	// batch may finish after a newer one.
	if number > g.settled {
		g.settled = number
		if ports.KindOf(err) == ports.KindUnavailable {
			failed = g.drain()
		}
	}
	g.observe()
	g.mu.Unlock()
	for i, req := range batch {
		req.done <- results[i]
	}
	for _, req := range failed {
		req.done <- fmt.Errorf("group commit: not written, a batch before it found the store unavailable: %w", err)
	}
	return buf[:0]
}

func (g *GroupCommitter) stamp(msgs []domain.Message) {
	if g.opts.Stamper != nil {
		g.opts.Stamper.StampBatch(msgs)
	}
}

// drain removes every queued request and releases its load; g.mu is held.
func (g *GroupCommitter) drain() []*commitRequest {
	var drained []*commitRequest
	for len(g.queue) > 0 {
		drained = append(drained, g.take()...)
	}
	for _, req := range drained {
		g.held.sub(req.size)
	}
	return drained
}

// Close stops accepting messages (Append then fails with ErrUnavailable), writes
// what is queued and waits for the writers to end. If ctx ends first, it aborts the
// writes in flight, fails what is still queued with ErrUnavailable and returns
// ctx's error.
func (g *GroupCommitter) Close(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	started := g.started
	g.mu.Unlock()
	if !started {
		return nil
	}
	g.signal()
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
	}
	g.abort()
	g.mu.Lock()
	dropped := g.drain()
	g.observe()
	g.mu.Unlock()
	for _, req := range dropped {
		req.done <- fmt.Errorf("group commit: shut down before the store write: %w", ports.ErrUnavailable)
	}
	return fmt.Errorf("group commit: flushing the queue: %w", ctx.Err())
}

func sizeOf(msgs []domain.Message) load {
	l := load{messages: len(msgs)}
	for _, m := range msgs {
		l.bytes += domain.EstimatedBytes(m)
	}
	return l
}

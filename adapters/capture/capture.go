// Package capture is net/http middleware that records each exchange (request and
// response) of the server it wraps and submits it to reqlog through a
// ports.ExchangeSubmitter: httpclient.Client for a remote reqlogd, or
// app.LocalSubmitter for the ingest use case in the same process (which
// embedded.Core.Capture wires for an embedder).
//
// It never changes or delays the response: it tees what the handler reads and
// writes, and the wrapped http.ResponseWriter keeps the optional interfaces of the
// original (http.Flusher, http.Hijacker, io.ReaderFrom, and Unwrap for
// http.ResponseController). Exchanges wait in a bounded queue and are submitted in
// batches by one background goroutine; when the queue is full they are dropped and
// counted, never waited for.
//
// Each exchange carries duration_ms: from the moment the handler is called to its
// last write or flush of the reply (to its return if it writes nothing, to the
// hijack if it takes the connection over).
//
// A captured body longer than Options.MaxBodyBytes is cut (at a UTF-8 character
// boundary) and followed by a visible marker:
//
//	…[truncated by reqlog capture: 123456 bytes total]
//
// or "…[truncated by reqlog capture: at least 123456 bytes]" when the full size is
// unknown. Only the part of a request body that the handler reads is captured.
// When the submitter can have bodies cut after the privacy rules
// (ports.BodyCutter: app.LocalSubmitter, httpclient.Client), RulesLookahead
// bytes more are captured and sent, and the receiver cuts at MaxBodyBytes once
// the rules have read them: a secret straddling the cap is matched whole and
// never kept in part.
package capture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Defaults of Options.
const (
	DefaultName          = "default"
	DefaultMaxBodyBytes  = 64 << 10
	DefaultBufferSize    = 1000
	DefaultBatchSize     = 100
	DefaultMaxBatchBytes = 1 << 20
	DefaultFlushInterval = time.Second
	DefaultSubmitTimeout = time.Minute
	// DefaultMaxBodyReadTime is how long a body is captured for (a request's
	// from the handler's start, a reply's from its header): a body that
	// trickles is not held in capture for as long as it lasts.
	DefaultMaxBodyReadTime = time.Minute
	// RulesLookahead is how much more than MaxBodyBytes is read for the
	// privacy rules when the receiver cuts after them: a secret up to this
	// long straddling the cap (a PEM private key is under 4 KiB) is read
	// whole; one straddling the read bound lies past the cap, and is cut off.
	RulesLookahead = 16 << 10
)

// Options tune a Recorder; the zero value works.
type Options struct {
	// Name returns the application an exchange belongs to; it is called before the
	// handler runs. nil, or an empty result, means DefaultName.
	Name func(*http.Request) string
	// Skip, when it returns true, lets the request through unrecorded (health
	// checks, static files).
	Skip func(*http.Request) bool
	// Route returns the route template the request matched ("/orders/{id}"),
	// sent as the exchange's route; it is called once the handler has
	// returned, with the request the middleware was given. nil reads what an
	// http.ServeMux (Go 1.22+) matched: Request.Pattern without its method and
	// host (PatternRoute). Other routers set their match on a request of their
	// own, so the middleware must run inside them; with gorilla/mux, as
	// router.Use(recorder.Middleware) and
	//
	//	Route: func(r *http.Request) string {
	//		if route := mux.CurrentRoute(r); route != nil {
	//			template, _ := route.GetPathTemplate()
	//			return template
	//		}
	//		return ""
	//	}
	//
	// A result the service would refuse (see domain.ValidRoute: empty, no
	// leading /, a ? or #, over 256 characters, control characters) is not
	// sent, so that it cannot fail the batch.
	Route func(*http.Request) string

	// MaxBodyBytes caps each captured body, request and response (0:
	// DefaultMaxBodyBytes; negative: keep no body, only the truncation marker).
	MaxBodyBytes int
	// MaxBodyReadTime bounds how long each body is captured (0:
	// DefaultMaxBodyReadTime; negative: no bound): a request body from the
	// handler's start, a reply from its header. Past it the rest streams
	// through uncaptured, and the body is recorded marked as cut, less its
	// last RulesLookahead bytes (a secret the cut split is not kept in part);
	// a reply still streaming is recorded at its next write, not at its end.
	MaxBodyReadTime time.Duration
	// Decoders are the content codings whose bodies are recorded decoded, by
	// their lower-case name (nil: StandardDecoders; empty: none). Decoding
	// stops at MaxBodyBytes (decode.go).
	Decoders map[string]Decoder
	// MaskedHeaders are replaced by domain.Mask before exchanges leave the process
	// (nil: domain.DefaultMaskedHeaders; empty: mask nothing here).
	MaskedHeaders []string

	// ClientIPHeader names a header set by a reverse proxy in front of the server,
	// such as X-Forwarded-For or X-Real-Ip; "" uses the connection's address only.
	// Without TrustedProxies one proxy is assumed and the last address of the
	// header is the client's. With TrustedProxies the header is read only from
	// those peers, and the client is the last address that is not one of them.
	ClientIPHeader string
	TrustedProxies []netip.Prefix

	// BufferSize is how many exchanges may wait for submission (0:
	// DefaultBufferSize); more are dropped.
	BufferSize int
	// BatchSize and MaxBatchBytes (an estimate of the encoded size) trigger a
	// submission when a batch reaches either (0: the defaults).
	BatchSize     int
	MaxBatchBytes int
	// FlushInterval is the longest an exchange waits for its batch to fill (0:
	// DefaultFlushInterval).
	FlushInterval time.Duration
	// SubmitTimeout bounds one submission, retries included (0: DefaultSubmitTimeout).
	SubmitTimeout time.Duration
	// OnError, if set, hears of every failed submission, from the background
	// goroutine; it should return quickly.
	OnError func(error)

	// Clock times exchanges: created_at and duration_ms (nil: the system clock).
	Clock ports.Clock
}

// systemClock is time.Now, whose monotonic reading keeps durations exact across
// wall-clock changes.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (o Options) withDefaults() Options {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	o.MaxBodyBytes = max(o.MaxBodyBytes, 0)
	if o.MaxBodyReadTime == 0 {
		o.MaxBodyReadTime = DefaultMaxBodyReadTime
	}
	if o.Decoders == nil {
		o.Decoders = StandardDecoders()
	}
	set(&o.BufferSize, DefaultBufferSize)
	set(&o.BatchSize, DefaultBatchSize)
	set(&o.MaxBatchBytes, DefaultMaxBatchBytes)
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.SubmitTimeout <= 0 {
		o.SubmitTimeout = DefaultSubmitTimeout
	}
	if o.MaskedHeaders == nil {
		o.MaskedHeaders = domain.DefaultMaskedHeaders
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.Route == nil {
		o.Route = PatternRoute
	}
	return o
}

// PatternRoute is the pattern an http.ServeMux matched for r, without its
// method and host ("GET example.com/orders/{id}" gives "/orders/{id}"); "" when
// r was not served by one, or the pattern was set on a request of the mux's
// own (a middleware in between that made a copy with WithContext).
func PatternRoute(r *http.Request) string {
	pattern := r.Pattern
	if method, rest, ok := strings.Cut(pattern, " "); ok && !strings.Contains(method, "/") {
		pattern = strings.TrimLeft(rest, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // after the host
	}
	return pattern
}

// Stats counts exchanges. Once Close has returned, Captured = Submitted + Dropped +
// Failed; before, the difference is waiting in the queue or being submitted.
type Stats struct {
	Captured  uint64 // recorded by the middleware (skipped requests are not)
	Submitted uint64 // stored by the submitter
	Dropped   uint64 // not queued: the queue was full or the recorder closed
	Failed    uint64 // refused by the submitter, or lost to its errors
	// Abandoned counts exchanges not recorded because the client went away
	// while sending its request body; Captured does not include them.
	Abandoned uint64
}

// Recorder captures exchanges and submits them in the background. Create it with
// New and stop it with Close.
type Recorder struct {
	submitter ports.ExchangeSubmitter
	opts      Options
	masked    map[string]bool
	// readLimit is how much of each body is captured: MaxBodyBytes, plus
	// RulesLookahead when the submitter cuts after the rules.
	readLimit int

	queue chan *record
	// mu orders enqueueing against Close, so nothing is queued after the final drain.
	mu      sync.RWMutex
	closed  bool
	closing chan struct{}
	done    chan struct{}
	ctx     context.Context // of submissions; cancelled when Close gives up waiting
	cancel  context.CancelFunc
	once    sync.Once

	captured, submitted, dropped, failed, abandoned atomic.Uint64
}

// New starts a recorder that submits to submitter.
func New(submitter ports.ExchangeSubmitter, opts Options) *Recorder {
	opts = opts.withDefaults()
	readLimit := opts.MaxBodyBytes
	if cutter, ok := submitter.(ports.BodyCutter); ok && opts.MaxBodyBytes > 0 {
		submitter, readLimit = cutter.CuttingBodiesAt(opts.MaxBodyBytes), opts.MaxBodyBytes+RulesLookahead
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{
		submitter: submitter,
		opts:      opts,
		readLimit: readLimit,
		masked:    make(map[string]bool, len(opts.MaskedHeaders)),
		queue:     make(chan *record, opts.BufferSize),
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
		ctx:       ctx,
		cancel:    cancel,
	}
	for _, name := range opts.MaskedHeaders {
		r.masked[domain.HeaderMaskKey(name)] = true
	}
	go r.run()
	return r
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	return Stats{
		Captured:  r.captured.Load(),
		Submitted: r.submitted.Load(),
		Dropped:   r.dropped.Load(),
		Failed:    r.failed.Load(),
		Abandoned: r.abandoned.Load(),
	}
}

// Close stops recording (later requests are served and counted as dropped), submits
// what is queued and waits for it. If ctx ends first, the submission in progress is
// cancelled, what is left counts as failed, and Close returns ctx's error.
func (r *Recorder) Close(ctx context.Context) error {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.closing)
	})
	defer r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		r.cancel()
		<-r.done
		return ctx.Err()
	}
}

// enqueue hands rec to the background goroutine without ever waiting.
func (r *Recorder) enqueue(rec *record) {
	r.captured.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		r.dropped.Add(1)
		return
	}
	select {
	case r.queue <- rec:
	default:
		r.dropped.Add(1)
	}
}

// run batches queued exchanges until Close, then drains the queue.
func (r *Recorder) run() {
	defer close(r.done)
	ticker := time.NewTicker(r.opts.FlushInterval)
	defer ticker.Stop()
	var batch []domain.Exchange
	size := 0
	flush := func() {
		if len(batch) > 0 {
			r.submit(batch)
			batch, size = nil, 0
		}
	}
	add := func(rec *record) {
		e := r.exchange(rec)
		n := estimatedSize(e)
		if size+n > r.opts.MaxBatchBytes {
			flush()
		}
		batch = append(batch, e)
		size += n
		if len(batch) >= r.opts.BatchSize || size >= r.opts.MaxBatchBytes {
			flush()
		}
	}
	for {
		select {
		case rec := <-r.queue:
			add(rec)
		case <-ticker.C:
			flush()
		case <-r.closing:
			for {
				select {
				case rec := <-r.queue:
					add(rec)
				default:
					flush()
					return
				}
			}
		}
	}
}

// submit sends batch, as much of it as the submitter accepts (SubmitAll).
func (r *Recorder) submit(batch []domain.Exchange) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.SubmitTimeout)
	defer cancel()
	stored := SubmitAll(ctx, r.submitter, batch, func(items []int, err error) { r.fail(len(items), err) })
	r.submitted.Add(uint64(stored))
}

func (r *Recorder) fail(n int, err error) {
	r.failed.Add(uint64(n))
	if r.opts.OnError != nil {
		r.opts.OnError(fmt.Errorf("capture: %d exchanges not stored: %w", n, err))
	}
}

// SubmitAll stores batch through s as far as s accepts it, and returns how many
// exchanges were stored. A batch over the receiver's limits (domain.ErrTooLarge)
// is split in halves; one refused for some bad items is sent again without them,
// since batches are all-or-nothing. refused hears of every part that was not
// stored: the indexes of its exchanges in batch, and the error (a
// *domain.ValidationError for bad items; ports.ErrUnavailable or
// ports.ErrOverloaded when a later try may succeed).
func SubmitAll(ctx context.Context, s ports.ExchangeSubmitter, batch []domain.Exchange, refused func(items []int, err error)) int {
	items := make([]int, len(batch))
	for i := range items {
		items[i] = i
	}
	return submitPart(ctx, s, batch, items, refused)
}

// submitPart is SubmitAll on part of a batch; items are its exchanges' indexes in
// the whole.
func submitPart(ctx context.Context, s ports.ExchangeSubmitter, part []domain.Exchange, items []int, refused func([]int, error)) int {
	if len(part) == 0 {
		return 0
	}
	_, err := s.SubmitExchanges(ctx, part)
	if err == nil {
		return len(part)
	}
	if errors.Is(err, domain.ErrTooLarge) && len(part) > 1 {
		half := len(part) / 2
		return submitPart(ctx, s, part[:half], items[:half], refused) +
			submitPart(ctx, s, part[half:], items[half:], refused)
	}
	var invalid *domain.ValidationError
	if errors.As(err, &invalid) {
		if bad := domain.InvalidItems(invalid, len(part)); len(bad) > 0 && len(bad) < len(part) {
			skip := make(map[int]bool, len(bad))
			badItems := make([]int, 0, len(bad))
			for _, i := range bad {
				skip[i] = true
				badItems = append(badItems, items[i])
			}
			refused(badItems, err)
			keptPart := make([]domain.Exchange, 0, len(part)-len(bad))
			keptItems := make([]int, 0, len(part)-len(bad))
			for i, e := range part {
				if !skip[i] {
					keptPart, keptItems = append(keptPart, e), append(keptItems, items[i])
				}
			}
			return submitPart(ctx, s, keptPart, keptItems, refused)
		}
	}
	refused(items, err)
	return 0
}

// estimatedSize approximates an exchange's JSON size, to keep batches under the
// service's body limit; a batch that is still too large gets split.
func estimatedSize(e domain.Exchange) int {
	const overhead = 256 // field names, created_at, status, punctuation
	n := overhead + len(e.Name) + len(e.IPAddress) + len(e.Method) + len(e.Path) + len(e.Request.Body) + len(e.Response.Body)
	for _, h := range []map[string][]string{e.Request.Header, e.Response.Header} {
		for name, values := range h {
			n += len(name) + 6
			for _, v := range values {
				n += len(v) + 3
			}
		}
	}
	return n
}

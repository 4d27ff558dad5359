// Package otlp is reqlog's OpenTelemetry receiver: OTLP/HTTP trace exports
// (POST /v1/traces, binary protobuf or JSON) become messages, one per HTTP
// server span, through the same ingest path as POST /v1/messages (validation,
// masking, redaction). The OTLP types are the official
// go.opentelemetry.io/proto/otlp ones, the JSON encoding protojson's.
//
// Replies follow the OTLP/HTTP specification: 200 with an
// ExportTraceServiceResponse, whose partial_success counts the server spans
// that could not be taken and says why; errors as a google.rpc.Status with 400
// (bad data), 413 (too large), 415 (unknown content type or coding), 429 and 503
// with Retry-After (retry later). Every reply is encoded as the request was
// (JSON for a content type it does not know). Spans that are not HTTP server
// spans are accepted and not stored, counted in reqlog_otlp_spans_total.
//
// Memory is bounded before anything is decoded: a body (after gzip) of at most
// Config.MaxBodyBytes holding at most MaxMessages protobuf messages, and at most
// Config.Decoders requests read and decoded at once; more get 429 at once. Exporters retry a 429 or 503 with the same spans,
// so a request stored in part before the store went away may store those spans
// twice, as the specification accepts.
package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Path is where exporters send traces (OTLP/HTTP's default).
const Path = "/v1/traces"

// Content types of the two encodings.
const (
	protobufType = "application/x-protobuf"
	jsonType     = "application/json"
)

// How long clients are told to wait before retrying.
const (
	retryOverloaded  = time.Second
	retryUnavailable = 5 * time.Second
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 16 << 20
	DefaultMaxSpans     = 10_000
)

// Config is the receiver's own configuration.
type Config struct {
	// MaxBodyBytes bounds a request body, after gzip decompression (0:
	// DefaultMaxBodyBytes); beyond it the reply is 413.
	MaxBodyBytes int64
	// MaxSpans bounds the spans of one request, of every kind (0:
	// DefaultMaxSpans); beyond it the reply is 413.
	MaxSpans int
	// Decoders is how many requests may be read and decoded at once (0: one
	// per core: decoding only computes); more get 429.
	Decoders int
	// MaxMessageBytes bounds the text one span's message holds, bodies,
	// headers and path together (0: httpapi.DefaultMaxBodyBytes): a span over
	// it is rejected, as POST /v1/messages refuses a message over its body
	// limit. reqlogd sets it to that limit, REQLOG_MAX_BODY_BYTES.
	MaxMessageBytes int64
}

// DefaultConfig returns the defaults of every field.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: DefaultMaxBodyBytes, MaxSpans: DefaultMaxSpans, Decoders: runtime.GOMAXPROCS(0),
		MaxMessageBytes: httpapi.DefaultMaxBodyBytes}
}

// Validate reports the first unusable field as a *domain.ValidationError
// naming it.
func (c Config) Validate() error {
	bad := func(field, reason string) error {
		return &domain.ValidationError{Message: "otlp: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
	}
	switch {
	case c.MaxBodyBytes < 1:
		return bad("MaxBodyBytes", "must be at least 1")
	case c.MaxSpans < 1:
		return bad("MaxSpans", "must be at least 1")
	case c.Decoders < 1:
		return bad("Decoders", "must be at least 1")
	case c.MaxMessageBytes < 1:
		return bad("MaxMessageBytes", "must be at least 1")
	}
	return nil
}

// SubmitterFor is where a principal's exchanges go: app.LocalSubmitter in
// reqlogd.
type SubmitterFor func(domain.Principal) ports.ExchangeSubmitter

// Receiver serves OTLP/HTTP trace exports for principals its caller has
// authenticated.
type Receiver struct {
	cfg       Config
	submitter SubmitterFor
	slots     chan struct{}
	spans     SpanCounter
	log       *zap.Logger
}

// SpanCounter hears how many spans each request had, by outcome; nil counts
// nothing.
type SpanCounter interface {
	CountSpans(stored, ignored, rejected int)
}

// New returns a receiver storing through submitter; zero Config fields take
// their defaults.
func New(cfg Config, submitter SubmitterFor, spans SpanCounter, log *zap.Logger) *Receiver {
	def := DefaultConfig()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.MaxSpans <= 0 {
		cfg.MaxSpans = def.MaxSpans
	}
	if cfg.Decoders <= 0 {
		cfg.Decoders = def.Decoders
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = def.MaxMessageBytes
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Receiver{cfg: cfg, submitter: submitter, slots: make(chan struct{}, cfg.Decoders), spans: spans, log: log}
}

// failure is an error reply.
type failure struct {
	status     int
	message    string
	retryAfter time.Duration
}

// errReadOnly refuses a principal that may only read.
var errReadOnly = failure{status: http.StatusForbidden, message: "this credential may only read messages; export with an API key"}

// ServeTraces takes one export request from principal. A read-only principal
// (a portal session) is refused before the body is looked at, as POST
// /v1/messages refuses it: an empty export would otherwise be a 200.
func (rc *Receiver) ServeTraces(w http.ResponseWriter, r *http.Request, principal domain.Principal) {
	enc, known := encodingOf(r.Header.Get("Content-Type"))
	if principal.ReadOnly {
		rc.refuse(w, enc, errReadOnly)
		return
	}
	if !known {
		rc.refuse(w, enc, failure{status: http.StatusUnsupportedMediaType,
			message: "the body must be an ExportTraceServiceRequest sent as application/x-protobuf or application/json"})
		return
	}
	select {
	case rc.slots <- struct{}{}:
		defer func() { <-rc.slots }()
	default:
		rc.refuse(w, enc, failure{status: http.StatusTooManyRequests, retryAfter: retryOverloaded,
			message: fmt.Sprintf("%d exports are being decoded; retry later", rc.cfg.Decoders)})
		return
	}
	req, fail := rc.decode(w, r, enc)
	if fail != nil {
		rc.refuse(w, enc, *fail)
		return
	}
	conv := Convert(req.GetResourceSpans())
	req = nil // the exchanges hold what is needed; the rest may be collected
	conv = rc.rejectOversized(conv)
	stored, rejected, fail := rc.store(r.Context(), principal, conv)
	if fail != nil {
		rc.refuse(w, enc, *fail)
		return
	}
	if rc.spans != nil {
		rc.spans.CountSpans(stored, conv.Ignored, len(rejected))
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if len(rejected) > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: int64(len(rejected)), ErrorMessage: summary(rejected)}
	}
	write(w, enc, http.StatusOK, resp)
}

// RefuseTraces answers an export the caller refused before ServeTraces
// (authentication, rate limit) with status and message as OTLP's Status, in
// the request's encoding. Headers set on w (Retry-After, WWW-Authenticate) are
// sent.
func (rc *Receiver) RefuseTraces(w http.ResponseWriter, r *http.Request, status int, message string) {
	enc, _ := encodingOf(r.Header.Get("Content-Type"))
	rc.refuse(w, enc, failure{status: status, message: message})
}

// decode reads the body within the limits and unmarshals it.
func (rc *Receiver) decode(w http.ResponseWriter, r *http.Request, enc string) (*coltracepb.ExportTraceServiceRequest, *failure) {
	tooLarge := &failure{status: http.StatusRequestEntityTooLarge,
		message: fmt.Sprintf("the request body is larger than the limit of %d bytes (after decompression); send smaller batches", rc.cfg.MaxBodyBytes)}
	if r.ContentLength > rc.cfg.MaxBodyBytes {
		return nil, tooLarge
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, rc.cfg.MaxBodyBytes)
	switch coding := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); coding {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, &failure{status: http.StatusBadRequest, message: "the body is not valid gzip: " + err.Error()}
		}
		defer zr.Close()
		body = zr
	default:
		return nil, &failure{status: http.StatusUnsupportedMediaType, message: "Content-Encoding " + coding + " is not supported: send gzip or nothing"}
	}
	raw, err := io.ReadAll(io.LimitReader(body, rc.cfg.MaxBodyBytes+1))
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes) || int64(len(raw)) > rc.cfg.MaxBodyBytes:
		return nil, tooLarge
	case err != nil:
		return nil, &failure{status: http.StatusBadRequest, message: "the request body could not be read: " + err.Error()}
	}
	count := countMessages
	if enc == jsonType {
		count = countObjects
	}
	if count(raw, MaxMessages) > MaxMessages {
		return nil, &failure{status: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("the request holds more than %d messages (spans, attributes, values); send smaller batches", MaxMessages)}
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if enc == jsonType {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, req)
	} else {
		err = proto.Unmarshal(raw, req)
	}
	if err != nil {
		return nil, &failure{status: http.StatusBadRequest, message: "the body is not a valid ExportTraceServiceRequest: " + err.Error()}
	}
	if n := spanCount(req); n > rc.cfg.MaxSpans {
		return nil, &failure{status: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("the request has %d spans, more than the limit of %d; send smaller batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)", n, rc.cfg.MaxSpans)}
	}
	return req, nil
}

func spanCount(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// store submits the exchanges as far as the service takes them. Exchanges the
// validator refuses are rejected spans; a store that is down or overloaded
// fails the request, for the exporter to retry.
func (rc *Receiver) store(ctx context.Context, principal domain.Principal, conv Conversion) (int, []Rejection, *failure) {
	rejected := conv.Rejected
	var lost error
	stored := capture.SubmitAll(ctx, rc.submitter(principal), conv.Exchanges, func(items []int, err error) {
		var invalid *domain.ValidationError
		if errors.As(err, &invalid) || errors.Is(err, domain.ErrTooLarge) {
			for _, i := range items {
				rejected = append(rejected, Rejection{Span: spanName(conv.Exchanges[i]), Reason: refusal(err)})
			}
			return
		}
		if lost == nil {
			lost = err
		}
	})
	if lost == nil {
		return stored, rejected, nil
	}
	switch {
	case errors.Is(lost, ports.ErrForbidden):
		return 0, nil, &errReadOnly
	case ports.KindOf(lost) == ports.KindOverloaded:
		return 0, nil, &failure{status: http.StatusTooManyRequests, retryAfter: retryOverloaded, message: "the service is overloaded; retry later"}
	case ports.KindOf(lost) == ports.KindUnavailable || ports.KindOf(lost) == ports.KindCanceled:
		return 0, nil, &failure{status: http.StatusServiceUnavailable, retryAfter: retryUnavailable, message: "the store is unavailable; retry later"}
	}
	rc.log.Error("OTLP export not stored", zap.Error(lost))
	return 0, nil, &failure{status: http.StatusInternalServerError, message: "internal error"}
}

// rejectOversized moves the exchanges whose text is over MaxMessageBytes to
// the rejected: the API would refuse each with a 413, its message alone being
// over its body limit.
func (rc *Receiver) rejectOversized(conv Conversion) Conversion {
	kept := conv.Exchanges[:0]
	for _, e := range conv.Exchanges {
		if n := textBytes(e); n > rc.cfg.MaxMessageBytes {
			conv.Rejected = append(conv.Rejected, Rejection{Span: spanName(e),
				Reason: fmt.Sprintf("holds %d bytes of text, over the limit of %d bytes on a message (REQLOG_MAX_BODY_BYTES)", n, rc.cfg.MaxMessageBytes)})
			continue
		}
		kept = append(kept, e)
	}
	conv.Exchanges = kept
	return conv
}

// textBytes is the text e holds: its bodies, headers, path and other strings,
// at least what its message's JSON takes.
func textBytes(e domain.Exchange) int64 {
	n := len(e.Name) + len(e.IPAddress) + len(e.Method) + len(e.Path) + len(e.Route) + len(e.Request.Body) + len(e.Response.Body)
	for _, h := range []map[string][]string{e.Request.Header, e.Response.Header} {
		for name, values := range h {
			n += len(name)
			for _, v := range values {
				n += len(v)
			}
		}
	}
	return int64(n)
}

// spanName names an exchange's span in messages, as its method and path.
func spanName(e domain.Exchange) string { return e.Method + " " + e.Path }

// refusal is the validator's reason for one item, without its batch index.
func refusal(err error) string {
	var invalid *domain.ValidationError
	if errors.As(err, &invalid) && len(invalid.Fields) > 0 {
		f := invalid.Fields[0]
		field := f.Field
		if _, rest, ok := strings.Cut(field, "]."); ok && strings.HasPrefix(field, "[") {
			field = rest
		}
		return field + " " + f.Message
	}
	return err.Error()
}

// summary is the partial success message: how many spans, and why for the
// first few.
func summary(rejected []Rejection) string {
	const shown = 3
	var b strings.Builder
	fmt.Fprintf(&b, "%d HTTP server spans were not stored: ", len(rejected))
	for i, r := range rejected[:min(shown, len(rejected))] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "span %q %s", truncate(r.Span, 100), truncate(r.Reason, 200))
	}
	if len(rejected) > shown {
		fmt.Fprintf(&b, "; and %d more", len(rejected)-shown)
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD") // a path may hold any bytes
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// encodingOf is the encoding a Content-Type names, and whether it is one of
// OTLP's; unknown types are answered in JSON, which a person can read.
func encodingOf(contentType string) (string, bool) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return jsonType, false
	case mediaType == protobufType || mediaType == "application/protobuf":
		return protobufType, true
	case mediaType == jsonType:
		return jsonType, true
	}
	return jsonType, false
}

// Status codes (google.rpc.Code) of the HTTP statuses, as OTLP/gRPC uses them;
// OTLP/HTTP clients only record them.
var rpcCodes = map[int]int32{
	http.StatusBadRequest:            3,  // INVALID_ARGUMENT
	http.StatusUnauthorized:          16, // UNAUTHENTICATED
	http.StatusForbidden:             7,  // PERMISSION_DENIED
	http.StatusRequestEntityTooLarge: 8,  // RESOURCE_EXHAUSTED
	http.StatusUnsupportedMediaType:  3,  // INVALID_ARGUMENT
	http.StatusTooManyRequests:       8,  // RESOURCE_EXHAUSTED
	http.StatusServiceUnavailable:    14, // UNAVAILABLE
	http.StatusInternalServerError:   13, // INTERNAL
}

func (rc *Receiver) refuse(w http.ResponseWriter, enc string, f failure) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter/time.Second)))
	}
	// A decoder's error may quote the input's bytes; a Status message is UTF-8.
	write(w, enc, f.status, &status.Status{Code: rpcCodes[f.status], Message: strings.ToValidUTF8(f.message, "\uFFFD")})
}

func write(w http.ResponseWriter, enc string, code int, m proto.Message) {
	var body []byte
	var err error
	if enc == jsonType {
		body, err = protojson.Marshal(m)
	} else {
		body, err = proto.Marshal(m)
	}
	if err != nil { // only a message that is not valid UTF-8 could fail, and ours are
		code, body = http.StatusInternalServerError, nil
	}
	w.Header().Set("Content-Type", enc)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

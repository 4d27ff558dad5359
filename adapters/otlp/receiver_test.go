package otlp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap/zaptest"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

const apiKey = "rk_otlp_test_key_0123"

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

// service is reqlog's API with the receiver, on a real memory store, and a
// portal session token of the key's account.
type service struct {
	url         string
	reader      *app.Reader
	portalToken string
}

type serviceOptions struct {
	cfg     otlp.Config
	store   ports.MessageStore
	limiter *httpapi.RateLimiter
}

func newService(t *testing.T, o serviceOptions) *service {
	t.Helper()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	store := o.store
	if store == nil {
		store = memory.New()
	}
	ingest := app.NewIngester(store, policy, app.SystemClock{})
	submitter := func(p domain.Principal) ports.ExchangeSubmitter {
		return app.LocalSubmitter{Ingester: ingest, Principal: p}
	}
	site, err := portal.New(portal.Config{Secret: portal.RandomSecret()}, app.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	keys := site.KeyStore(keyring.New([]keyring.Entry{{Account: scope.Account, Domain: scope.Domain, Digest: keyring.Digest(apiKey)}}))
	api := httpapi.New(ingest, app.NewReader(store, policy, app.SystemClock{}), keys, httpapi.Options{
		Traces: otlp.New(o.cfg, submitter, nil, zaptest.NewLogger(t)), RateLimiter: o.limiter, Portal: site})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	session, err := site.CreateSession(domain.Principal{Scope: scope}, portal.SessionRequest{}, httptest.NewRequest(http.MethodGet, "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	return &service{url: srv.URL, reader: app.NewReader(store, policy, app.SystemClock{}), portalToken: session.Token}
}

// stored returns the messages the service holds, newest first, once there
// are n.
func (s *service) stored(t *testing.T, n int) []domain.Message {
	t.Helper()
	page, err := s.reader.List(context.Background(), domain.Principal{Scope: scope}, domain.Query{Limit: domain.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != n {
		t.Fatalf("stored %d messages, want %d", len(page.Messages), n)
	}
	return page.Messages
}

// The Go SDK's own exporter, as an instrumented service runs it: its HTTP server
// spans become messages, read back through the API; its other spans do not.
func TestTheGoSDKExportsToReqlog(t *testing.T) {
	for _, compression := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
		t.Run(fmt.Sprintf("compression %d", compression), func(t *testing.T) {
			svc := newService(t, serviceOptions{})
			var handled []error
			var mu sync.Mutex
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { mu.Lock(); handled = append(handled, err); mu.Unlock() }))
			exp, err := otlptracehttp.New(context.Background(),
				otlptracehttp.WithEndpointURL(svc.url+otlp.Path),
				otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + apiKey}),
				otlptracehttp.WithCompression(compression))
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "checkout"))))
			tracer := tp.Tracer("net/http")

			ctx, server := tracer.Start(context.Background(), "POST /orders/{id}/pay", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", "POST"),
					attribute.String("url.path", "/orders/ord_8f7d/pay"),
					attribute.String("url.query", "retry=1"),
					attribute.String("http.route", "/orders/{id}/pay"),
					attribute.Int("http.response.status_code", 201),
					attribute.String("client.address", "198.51.100.4"),
					attribute.StringSlice("http.request.header.authorization", []string{"Bearer app-secret"}),
					attribute.StringSlice("http.request.header.content-type", []string{"application/json"}),
					attribute.String("http.request.body.content", `{"amount":12,"password":"hunter2"}`),
					attribute.String("http.response.body.content", `{"paid":true}`),
				))
			_, client := tracer.Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("url.full", "http://bank/charge"),
					attribute.Int("http.response.status_code", 200)))
			client.End()
			_, internal := tracer.Start(ctx, "compute")
			internal.End()
			server.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(handled) > 0 {
				t.Errorf("the exporter reported %v", handled)
			}

			m := svc.stored(t, 1)[0]
			if m.Name != "checkout" || m.Method != "POST" || m.Path != "/orders/ord_8f7d/pay?retry=1" || m.StatusCode != 201 || m.IPAddress != "198.51.100.4" {
				t.Errorf("stored %s %s %s %d %s", m.Name, m.Method, m.Path, m.StatusCode, m.IPAddress)
			}
			if !m.HasDuration || m.CreatedAt.IsZero() {
				t.Errorf("no duration or time: %+v", m)
			}
			if got := m.Request.Header["Authorization"]; len(got) != 1 || got[0] != domain.Mask {
				t.Errorf("Authorization stored as %q, want it masked", got)
			}
			if strings.Contains(m.Request.Body, "hunter2") || !strings.Contains(m.Request.Body, `"amount":12`) {
				t.Errorf("request body %q, want it with the password redacted", m.Request.Body)
			}
			if m.Response.Body != `{"paid":true}` || m.Request.ContentType != "application/json" {
				t.Errorf("response body %q, request content type %q", m.Response.Body, m.Request.ContentType)
			}
		})
	}
}

// OTLP's JSON: hex trace ids, enums as integers, lowerCamelCase, 64-bit
// integers as strings; the reply is JSON too.
func TestJSONEncoding(t *testing.T) {
	svc := newService(t, serviceOptions{})
	start := time.Now().Add(-time.Minute).UnixNano()
	body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},
	  "scopeSpans":[{"scope":{"name":"express"},"spans":[
	    {"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","name":"GET /users/:id","kind":2,
	     "startTimeUnixNano":"%d","endTimeUnixNano":"%d","unknownField":1,
	     "attributes":[{"key":"http.method","value":{"stringValue":"GET"}},{"key":"http.target","value":{"stringValue":"/users/7"}},
	                   {"key":"http.status_code","value":{"intValue":"404"}},{"key":"http.route","value":{"stringValue":"/users/:id"}}]},
	    {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"middleware","kind":1,
	     "startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`, start, start+2_500_000, start, start+1000)
	resp, reply := post(t, svc.url, "application/json", []byte(body))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("reply %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), reply)
	}
	var decoded coltracepb.ExportTraceServiceResponse
	if err := protojson.Unmarshal(reply, &decoded); err != nil || decoded.PartialSuccess != nil {
		t.Errorf("reply %s (%v), want a full success", reply, err)
	}
	m := svc.stored(t, 1)[0]
	if m.Name != "api" || m.Path != "/users/7" || m.StatusCode != 404 || m.Duration != 2500*time.Microsecond {
		t.Errorf("stored %+v", m)
	}
}

func post(t *testing.T, url, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+otlp.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, reply
}

// serverSpan is an HTTP server span that starts ago before now.
func serverSpan(path string, status int64, ago time.Duration) *tracepb.Span {
	start := time.Now().Add(-ago)
	return &tracepb.Span{Name: "GET " + path, Kind: tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(time.Millisecond).UnixNano()),
		Attributes: []*commonpb.KeyValue{str("http.request.method", "GET"), str("url.path", path), integer("http.response.status_code", status)}}
}

// export is an export request of spans from the application shop, encoded
// with marshal (proto.Marshal or protojson.Marshal).
func export(t *testing.T, marshal func(proto.Message) ([]byte, error), spans ...*tracepb.Span) []byte {
	t.Helper()
	b, err := marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{resourceOf("shop", spans...)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Spans the service cannot take are counted and explained in partial_success;
// the others are stored.
func TestPartialSuccess(t *testing.T) {
	svc := newService(t, serviceOptions{})
	noStatus := serverSpan("/no-status", 200, time.Minute)
	noStatus.Attributes = noStatus.Attributes[:2]
	resp, reply := post(t, svc.url, "application/x-protobuf", export(t, proto.Marshal,
		serverSpan("/ok", 200, time.Minute),
		serverSpan("/from-the-future", 200, -48*time.Hour),
		noStatus,
	))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("reply %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var decoded coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(reply, &decoded); err != nil {
		t.Fatal(err)
	}
	ps := decoded.GetPartialSuccess()
	if ps.GetRejectedSpans() != 2 || !strings.Contains(ps.GetErrorMessage(), "created_at") ||
		!strings.Contains(ps.GetErrorMessage(), "http.response.status_code") {
		t.Errorf("partial success %+v, want 2 rejected, with both reasons", ps)
	}
	if m := svc.stored(t, 1)[0]; m.Path != "/ok" {
		t.Errorf("stored %s", m.Path)
	}
}

// A span whose message the API would refuse as too large, whose text is over
// the API's body limit, is rejected, not stored; the API refuses the same
// message with a 413.
func TestASpanOverTheAPIsBodyLimitIsRejected(t *testing.T) {
	svc := newService(t, serviceOptions{})
	big := strings.Repeat("x", httpapi.DefaultMaxBodyBytes+1)
	over := serverSpan("/big", 200, time.Minute)
	over.Attributes = append(over.Attributes, str("http.response.body.content", big))
	under := serverSpan("/ok", 200, time.Minute)
	under.Attributes = append(under.Attributes, str("http.response.body.content", big[:64<<10]))
	resp, reply := post(t, svc.url, "application/x-protobuf", export(t, proto.Marshal, over, under))
	var decoded coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(reply, &decoded); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reply %d: %v", resp.StatusCode, err)
	}
	if ps := decoded.GetPartialSuccess(); ps.GetRejectedSpans() != 1 || !strings.Contains(ps.GetErrorMessage(), "/big") {
		t.Errorf("partial success %+v, want the big span rejected", ps)
	}
	if m := svc.stored(t, 1)[0]; m.Path != "/ok" {
		t.Errorf("stored %s, want only /ok", m.Path)
	}

	message := fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"GET","path":"/big","request":{},"response":{"status_code":200,"body":%q}}`,
		time.Now().Unix(), big)
	req, _ := http.NewRequest(http.MethodPost, svc.url+"/v1/messages", strings.NewReader(message))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	apiResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	apiResp.Body.Close()
	if apiResp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("the API took the same message with %d, want 413", apiResp.StatusCode)
	}
}

// Every refusal is an OTLP Status in the request's encoding, with the code the
// specification gives it, and nothing stored.
func TestRefusals(t *testing.T) {
	cut := export(t, proto.Marshal, serverSpan("/a", 200, time.Minute))
	cut = cut[:len(cut)-5]
	tooMany := make([]*tracepb.Span, 11)
	for i := range tooMany {
		tooMany[i] = serverSpan("/many", 200, time.Minute)
	}
	svc := newService(t, serviceOptions{cfg: otlp.Config{MaxBodyBytes: 4096, MaxSpans: 10}})
	for _, tc := range []struct {
		name        string
		contentType string
		body        []byte
		header      []string
		status      int
		replyType   string
	}{
		{"wrong content type", "text/plain", []byte("hello"), nil, http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "", export(t, proto.Marshal, serverSpan("/a", 200, time.Minute)), nil, http.StatusUnsupportedMediaType, "application/json"},
		{"truncated protobuf", "application/x-protobuf", cut, nil, http.StatusBadRequest, "application/x-protobuf"},
		{"JSON that is not JSON", "application/json", []byte(`{"resourceSpans":[`), nil, http.StatusBadRequest, "application/json"},
		{"JSON of another shape", "application/json", []byte(`{"resourceSpans":{"a":1}}`), nil, http.StatusBadRequest, "application/json"},
		{"oversized", "application/x-protobuf", bytes.Repeat([]byte{0}, 5000), nil, http.StatusRequestEntityTooLarge, "application/x-protobuf"},
		{"too many spans", "application/x-protobuf", export(t, proto.Marshal, tooMany...), nil, http.StatusRequestEntityTooLarge, "application/x-protobuf"},
		{"not gzip", "application/x-protobuf", []byte("plain"), []string{"Content-Encoding", "gzip"}, http.StatusBadRequest, "application/x-protobuf"},
		{"unknown coding", "application/x-protobuf", []byte("x"), []string{"Content-Encoding", "br"}, http.StatusUnsupportedMediaType, "application/x-protobuf"},
		{"no key", "application/x-protobuf", export(t, proto.Marshal), []string{"Authorization", ""}, http.StatusUnauthorized, "application/x-protobuf"},
		{"unknown key", "application/json", []byte(`{}`), []string{"Authorization", "Bearer rk_nobody_at_all_here"}, http.StatusUnauthorized, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, reply := post(t, svc.url, tc.contentType, tc.body, tc.header...)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.replyType {
				t.Fatalf("reply %d %s %q, want %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), reply, tc.status, tc.replyType)
			}
			st := decodeStatus(t, tc.replyType, reply)
			if st.GetMessage() == "" {
				t.Errorf("status %+v has no message", st)
			}
			if tc.status == http.StatusUnauthorized && resp.Header.Get("Www-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	svc.stored(t, 0)
}

// A portal session may read, never export: its POST is a 403 whatever the
// body holds, an empty export or one that is not even an export.
func TestAPortalSessionMayNotExport(t *testing.T) {
	svc := newService(t, serviceOptions{})
	bearer := []string{"Authorization", "Bearer " + svc.portalToken}
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		{"a span", "application/x-protobuf", export(t, proto.Marshal, serverSpan("/a", 200, time.Minute))},
		{"empty body", "application/x-protobuf", nil},
		{"empty export", "application/json", []byte(`{}`)},
		{"no resource spans", "application/x-protobuf", export(t, proto.Marshal)},
		{"not an export", "application/json", []byte(`[`)},
		{"unknown type", "text/plain", []byte("x")},
	} {
		resp, reply := post(t, svc.url, tc.contentType, tc.body, bearer...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", tc.name, resp.StatusCode, reply)
		}
	}
	svc.stored(t, 0)
}

func decodeStatus(t *testing.T, contentType string, reply []byte) *status.Status {
	t.Helper()
	st := &status.Status{}
	var err error
	if contentType == "application/json" {
		err = protojson.Unmarshal(reply, st)
	} else {
		err = proto.Unmarshal(reply, st)
	}
	if err != nil {
		t.Fatalf("reply %q is not a google.rpc.Status: %v", reply, err)
	}
	return st
}

func TestRateLimitIs429WithRetryAfter(t *testing.T) {
	svc := newService(t, serviceOptions{limiter: httpapi.NewRateLimiter(0.001, 1, nil)})
	if resp, reply := post(t, svc.url, "application/x-protobuf", export(t, proto.Marshal, serverSpan("/a", 200, time.Minute))); resp.StatusCode != http.StatusOK {
		t.Fatalf("first export: %d %q", resp.StatusCode, reply)
	}
	resp, reply := post(t, svc.url, "application/x-protobuf", export(t, proto.Marshal, serverSpan("/b", 200, time.Minute)))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second export: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if st := decodeStatus(t, "application/x-protobuf", reply); st.GetCode() != 8 {
		t.Errorf("status %+v, want RESOURCE_EXHAUSTED", st)
	}
}

// downStore fails every write the way a store adapter reports an outage.
type downStore struct{ ports.MessageStore }

func (downStore) Append(context.Context, []domain.Message) error {
	return fmt.Errorf("dial: %w", ports.ErrUnavailable)
}

func TestStoreDownIs503WithRetryAfter(t *testing.T) {
	svc := newService(t, serviceOptions{store: downStore{memory.New()}})
	resp, reply := post(t, svc.url, "application/json", export(t, protojson.Marshal, serverSpan("/a", 200, time.Minute)))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("reply %d %q, Retry-After %q", resp.StatusCode, reply, resp.Header.Get("Retry-After"))
	}
	if st := decodeStatus(t, "application/json", reply); st.GetCode() != 14 {
		t.Errorf("status %+v, want UNAVAILABLE", st)
	}
}

// A span with a million attributes is refused before it is decoded (413); one
// with a few thousand is rejected on its own, and the service goes on.
func TestAMillionAttributes(t *testing.T) {
	svc := newService(t, serviceOptions{})
	withAttributes := func(n int) *tracepb.Span {
		s := serverSpan(fmt.Sprintf("/%d-attributes", n), 200, time.Minute)
		for i := range n {
			s.Attributes = append(s.Attributes, integer("a", int64(i)))
		}
		return s
	}
	var js bytes.Buffer // written by hand: protojson takes seconds over it
	js.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":2,"attributes":[`)
	for i := range 1_000_000 {
		if i > 0 {
			js.WriteByte(',')
		}
		js.WriteString(`{"key":"a","value":{"intValue":"1"}}`)
	}
	js.WriteString(`]}]}]}]}`)
	for enc, body := range map[string][]byte{"application/x-protobuf": export(t, proto.Marshal, withAttributes(1_000_000)), "application/json": js.Bytes()} {
		resp, reply := post(t, svc.url, enc, body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s, a million attributes: reply %d %q", enc, resp.StatusCode, reply)
		}
	}
	resp, reply := post(t, svc.url, "application/x-protobuf", export(t, proto.Marshal, withAttributes(5000), serverSpan("/fine", 200, time.Minute)))
	var decoded coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(reply, &decoded); resp.StatusCode != http.StatusOK || err != nil || decoded.GetPartialSuccess().GetRejectedSpans() != 1 {
		t.Fatalf("reply %d %+v (%v), want the span of 5,000 attributes rejected", resp.StatusCode, &decoded, err)
	}
	if m := svc.stored(t, 1)[0]; m.Path != "/fine" {
		t.Errorf("stored %s", m.Path)
	}
}

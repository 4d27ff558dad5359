package otlp_test

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/domain"
)

var spanStart = time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func integer(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func strs(k string, vs ...string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{}
	for _, v := range vs {
		arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}})
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}

func span(kind tracepb.Span_SpanKind, took time.Duration, attrs ...*commonpb.KeyValue) *tracepb.Span {
	return &tracepb.Span{Name: "span", Kind: kind, Attributes: attrs,
		StartTimeUnixNano: uint64(spanStart.UnixNano()), EndTimeUnixNano: uint64(spanStart.Add(took).UnixNano())}
}

func resourceOf(name string, spans ...*tracepb.Span) *tracepb.ResourceSpans {
	rs := &tracepb.ResourceSpans{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}
	if name != "" {
		rs.Resource = &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", name)}}
	}
	return rs
}

func TestConvertCurrentConventions(t *testing.T) {
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("shop", span(tracepb.Span_SPAN_KIND_SERVER, 1234567*time.Nanosecond,
		str("http.request.method", "POST"),
		str("url.path", "/orders/42/pay"),
		str("url.query", "currency=EUR"),
		str("http.route", "/orders/{id}/pay"),
		integer("http.response.status_code", 402),
		str("client.address", "::ffff:192.0.2.7"),
		strs("http.request.header.content-type", "application/json"),
		strs("http.request.header.x-tag", "a", "b"),
		strs("http.response.header.content-type", "application/problem+json"),
		str("http.request.body.content", `{"card":"4242"}`),
		str("http.response.body.content", `{"title":"declined"}`),
	))})
	if c.Ignored != 0 || len(c.Rejected) != 0 || len(c.Exchanges) != 1 {
		t.Fatalf("conversion %+v", c)
	}
	want := domain.Exchange{
		Name: "shop", CreatedAt: spanStart, IPAddress: "192.0.2.7", Method: "POST",
		Path: "/orders/42/pay?currency=EUR", Route: "/orders/{id}/pay",
		Request:  domain.ExchangeRequest{Header: map[string][]string{"Content-Type": {"application/json"}, "X-Tag": {"a", "b"}}, Body: `{"card":"4242"}`},
		Response: domain.ExchangeResponse{StatusCode: 402, Header: map[string][]string{"Content-Type": {"application/problem+json"}}, Body: `{"title":"declined"}`},
		Duration: 1234567 * time.Nanosecond, HasDuration: true,
	}
	if got := c.Exchanges[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("exchange\n got %+v\nwant %+v", got, want)
	}
}

func TestConvertOlderConventions(t *testing.T) {
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("", span(tracepb.Span_SPAN_KIND_SERVER, time.Millisecond,
		str("http.method", "get"),
		str("http.target", "/search?q=a%20b"),
		str("http.status_code", "200"), // some SDKs send it as a string
		str("net.peer.ip", "203.0.113.5"),
		str("http.request.header.user_agent", "curl/8"), // underscores, as older Python SDKs write names
	))})
	if len(c.Exchanges) != 1 {
		t.Fatalf("conversion %+v", c)
	}
	e := c.Exchanges[0]
	if e.Name != "unknown_service" || e.Method != "get" || e.Path != "/search?q=a%20b" || e.Response.StatusCode != 200 ||
		e.IPAddress != "203.0.113.5" || !reflect.DeepEqual(e.Request.Header, map[string][]string{"User-Agent": {"curl/8"}}) {
		t.Errorf("exchange %+v", e)
	}
}

func TestConvertTakesThePathOfTheFullURL(t *testing.T) {
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s", span(tracepb.Span_SPAN_KIND_SERVER, 0,
		str("http.method", "GET"), str("http.url", "https://shop.example/a/b?c=d"), integer("http.status_code", 204),
		str("client.address", "shop-client.internal"))),
	})
	if len(c.Exchanges) != 1 || c.Exchanges[0].Path != "/a/b?c=d" || c.Exchanges[0].IPAddress != "" {
		t.Errorf("conversion %+v, want the URL's path and no address for a host name", c)
	}
}

func TestConvertIgnoresSpansThatAreNotHTTPServers(t *testing.T) {
	http := []*commonpb.KeyValue{str("http.request.method", "GET"), str("url.path", "/"), integer("http.response.status_code", 200)}
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s",
		span(tracepb.Span_SPAN_KIND_CLIENT, 0, http...),
		span(tracepb.Span_SPAN_KIND_INTERNAL, 0, http...),
		span(tracepb.Span_SPAN_KIND_SERVER, 0, str("rpc.system", "grpc")),
		span(tracepb.Span_SPAN_KIND_SERVER, 0, http...),
	)})
	if c.Ignored != 3 || len(c.Exchanges) != 1 || len(c.Rejected) != 0 {
		t.Errorf("conversion: %d ignored, %d exchanges, %v rejected; want 3, 1, none", c.Ignored, len(c.Exchanges), c.Rejected)
	}
}

func TestConvertRejectsServerSpansItCannotRead(t *testing.T) {
	many := make([]*commonpb.KeyValue, otlp.MaxAttributes+1)
	for i := range many {
		many[i] = str("http.request.method", "GET")
	}
	backwards := span(tracepb.Span_SPAN_KIND_SERVER, 0, str("http.request.method", "GET"), str("url.path", "/"), integer("http.response.status_code", 200))
	backwards.EndTimeUnixNano = backwards.StartTimeUnixNano - 1
	noStart := span(tracepb.Span_SPAN_KIND_SERVER, 0, str("http.request.method", "GET"), str("url.path", "/"), integer("http.response.status_code", 200))
	noStart.StartTimeUnixNano = 0
	for name, s := range map[string]*tracepb.Span{
		"no path":                       span(tracepb.Span_SPAN_KIND_SERVER, 0, str("http.request.method", "GET"), integer("http.response.status_code", 200)),
		"no status":                     span(tracepb.Span_SPAN_KIND_SERVER, 0, str("http.request.method", "GET"), str("url.path", "/")),
		"status 0":                      span(tracepb.Span_SPAN_KIND_SERVER, 0, str("http.request.method", "GET"), str("url.path", "/"), integer("http.response.status_code", 0)),
		"ends before it starts":         backwards,
		"no start time":                 noStart,
		"a thousand and one attributes": span(tracepb.Span_SPAN_KIND_SERVER, 0, many...),
	} {
		c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s", s)})
		if len(c.Rejected) != 1 || len(c.Exchanges) != 0 || c.Rejected[0].Reason == "" {
			t.Errorf("%s: conversion %+v, want the span rejected with a reason", name, c)
		}
	}
}

// A span longer than the contract's bound keeps its exchange, without a
// duration, as the capture middleware does.
func TestConvertLeavesAnOverlongDurationUnknown(t *testing.T) {
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s", span(tracepb.Span_SPAN_KIND_SERVER, domain.MaxDuration+time.Second,
		str("http.request.method", "GET"), str("url.path", "/stream"), integer("http.response.status_code", 200)))})
	if len(c.Exchanges) != 1 || c.Exchanges[0].HasDuration {
		t.Errorf("conversion %+v", c)
	}
}

// An http.route the service would refuse is left out; the exchange stays.
func TestConvertLeavesOutARouteTheServiceRefuses(t *testing.T) {
	for route, want := range map[string]string{"/users/:id": "/users/:id", "/users?id=1": "", "": "", "users/{id}": ""} {
		c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s", span(tracepb.Span_SPAN_KIND_SERVER, time.Millisecond,
			str("http.request.method", "GET"), str("url.path", "/users/7"), integer("http.response.status_code", 200), str("http.route", route)))})
		if len(c.Exchanges) != 1 || c.Exchanges[0].Route != want {
			t.Errorf("http.route %q: conversion %+v, want one exchange with route %q", route, c, want)
		}
	}
}

func TestConvertMethodOther(t *testing.T) {
	c := otlp.Convert([]*tracepb.ResourceSpans{resourceOf("s", span(tracepb.Span_SPAN_KIND_SERVER, 0,
		str("http.request.method", "_OTHER"), str("http.request.method_original", "PURGE"), str("url.path", "/"),
		integer("http.response.status_code", 200)))})
	if len(c.Exchanges) != 1 || c.Exchanges[0].Method != "PURGE" {
		t.Errorf("conversion %+v", c)
	}
}

// What the worst body the default limit lets in costs to decode: attributes of
// two bytes each, the most per byte. Run with -benchmem; the bytes per
// operation, times Config.Decoders, bound the receiver's decoding memory.
func BenchmarkDecodeTheDensestBody(b *testing.B) {
	raw := densestBody(otlp.DefaultMaxBodyBytes)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(raw, req); err != nil {
			b.Fatal(err)
		}
	}
}

// densestBody is an export of about n bytes: one span of empty attributes.
func densestBody(n int) []byte {
	s := &tracepb.Span{Kind: tracepb.Span_SPAN_KIND_SERVER}
	for range n / 2 {
		s.Attributes = append(s.Attributes, &commonpb.KeyValue{})
	}
	raw, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{resourceOf("s", s)}})
	if err != nil {
		panic(err)
	}
	return raw
}

// The count that refuses it first, on the same body: what countMessages buys.
func BenchmarkCountTheDensestBody(b *testing.B) {
	raw := densestBody(otlp.DefaultMaxBodyBytes)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if n := otlp.CountMessages(raw, otlp.MaxMessages); n <= otlp.MaxMessages {
			b.Fatalf("counted %d", n)
		}
	}
}

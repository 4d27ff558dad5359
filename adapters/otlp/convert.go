package otlp

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/reqlog/reqlog/domain"
)

// MaxAttributes is the most attributes a span may carry; a span with more is
// rejected. SDKs keep 128 by default (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT).
const MaxAttributes = 1000

// unknownService is the application of spans whose resource has no
// service.name, as the SDKs name it.
const unknownService = "unknown_service"

// Attribute names read from a server span: the current semantic conventions
// first, then the older names SDKs still send.
var (
	methodKeys   = []string{"http.request.method", "http.method"}
	statusKeys   = []string{"http.response.status_code", "http.status_code"}
	clientKeys   = []string{"client.address", "http.client_ip", "net.sock.peer.addr", "network.peer.address", "net.peer.ip"}
	fullURLKeys  = []string{"url.full", "http.url"}
	requestBody  = []string{"http.request.body.content"}
	responseBody = []string{"http.response.body.content"}
)

// Prefixes of the header attributes an exporter was told to capture.
const (
	requestHeaderPrefix  = "http.request.header."
	responseHeaderPrefix = "http.response.header."
)

// Conversion is what an export request turns into.
type Conversion struct {
	// Exchanges are the HTTP server spans, in request order.
	Exchanges []domain.Exchange
	// Ignored counts spans that are not HTTP server spans (clients, internal
	// work, servers of other protocols): accepted, and not stored.
	Ignored int
	// Rejected are the HTTP server spans that could not become an exchange.
	Rejected []Rejection
}

// Rejection says why one server span was not taken.
type Rejection struct {
	Span   string // the span's name
	Reason string
}

// Convert turns every HTTP server span of req into an exchange: a span of kind
// SERVER with an HTTP method attribute. It never fails as a whole: spans it
// cannot read are rejected one by one; the service's validator judges the rest
// when they are submitted.
func Convert(resourceSpans []*tracepb.ResourceSpans) Conversion {
	var c Conversion
	for _, rs := range resourceSpans {
		name := unknownService
		if v := stringAttr(rs.GetResource().GetAttributes(), "service.name"); v != "" {
			name = v
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, span := range ss.GetSpans() {
				c.add(name, span)
			}
		}
	}
	return c
}

func (c *Conversion) add(name string, span *tracepb.Span) {
	if span.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		c.Ignored++
		return
	}
	attrs := span.GetAttributes()
	if len(attrs) > MaxAttributes {
		c.Rejected = append(c.Rejected, Rejection{span.GetName(),
			fmt.Sprintf("has %d attributes, more than %d", len(attrs), MaxAttributes)})
		return
	}
	a := index(attrs)
	method := a.text(methodKeys...)
	if method == "" {
		c.Ignored++ // a server span of another protocol (gRPC, messaging)
		return
	}
	if method == "_OTHER" { // the convention's name for a method it does not know
		if original := a.text("http.request.method_original"); original != "" {
			method = original
		}
	}
	e, reason := exchange(name, method, span, a)
	if reason != "" {
		c.Rejected = append(c.Rejected, Rejection{span.GetName(), reason})
		return
	}
	c.Exchanges = append(c.Exchanges, e)
}

func exchange(name, method string, span *tracepb.Span, a attributes) (domain.Exchange, string) {
	path := a.path()
	if path == "" {
		return domain.Exchange{}, "has no url.path, http.target or url.full: the request's path is unknown"
	}
	status, ok := a.integer(statusKeys...)
	if !ok {
		return domain.Exchange{}, "has no http.response.status_code: the request got no response"
	}
	if status < 100 || status > 599 {
		return domain.Exchange{}, fmt.Sprintf("has status code %d, outside 100-599", status)
	}
	start, end := span.GetStartTimeUnixNano(), span.GetEndTimeUnixNano()
	if start == 0 || start > uint64(maxUnixNano) {
		return domain.Exchange{}, "has no usable start time"
	}
	if end < start {
		return domain.Exchange{}, "ends before it starts"
	}
	e := domain.Exchange{
		Name:      name,
		CreatedAt: time.Unix(0, int64(start)).UTC(),
		IPAddress: a.clientIP(),
		Method:    method,
		Path:      path,
		Request:   domain.ExchangeRequest{Header: a.headers(requestHeaderPrefix), Body: a.text(requestBody...)},
		Response:  domain.ExchangeResponse{StatusCode: int(status), Header: a.headers(responseHeaderPrefix), Body: a.text(responseBody...)},
	}
	// A route the service would refuse (a raw URL with its query, an empty
	// one) is left out rather than losing the exchange with it.
	if route := a.text("http.route"); domain.ValidRoute(route) {
		e.Route = route
	}
	// A span longer than the contract's bound (a stream left open for days)
	// keeps its exchange, without a duration.
	if d := time.Duration(end - start); end-start <= uint64(domain.MaxDuration) {
		e.Duration, e.HasDuration = d, true
	}
	return e, ""
}

// maxUnixNano is the latest start time read: what time.Duration holds.
const maxUnixNano = 1<<63 - 1

// attributes are a span's attributes by key (the first of a repeated key
// wins), and in their order.
type attributes struct {
	byKey map[string]*commonpb.AnyValue
	kvs   []*commonpb.KeyValue
}

func index(kvs []*commonpb.KeyValue) attributes {
	a := attributes{byKey: make(map[string]*commonpb.AnyValue, len(kvs)), kvs: kvs}
	for _, kv := range kvs {
		if _, seen := a.byKey[kv.GetKey()]; !seen && kv.GetValue() != nil {
			a.byKey[kv.GetKey()] = kv.GetValue()
		}
	}
	return a
}

// text is the first of keys present, as text: a string as is, bytes as they
// are, a number or boolean as written; "" when none is.
func (a attributes) text(keys ...string) string {
	for _, k := range keys {
		if v, ok := a.byKey[k]; ok {
			if s, ok := scalarText(v); ok {
				return s
			}
		}
	}
	return ""
}

func scalarText(v *commonpb.AnyValue) (string, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue, true
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue), true
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), true
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), true
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), true
	}
	return "", false
}

// integer is the first of keys present as a whole number (an int, or a
// string of digits as some SDKs send).
func (a attributes) integer(keys ...string) (int64, bool) {
	for _, k := range keys {
		v, ok := a.byKey[k]
		if !ok {
			continue
		}
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			return x.IntValue, true
		case *commonpb.AnyValue_StringValue:
			if n, err := strconv.ParseInt(strings.TrimSpace(x.StringValue), 10, 64); err == nil {
				return n, true
			}
		case *commonpb.AnyValue_DoubleValue:
			if x.DoubleValue == float64(int64(x.DoubleValue)) {
				return int64(x.DoubleValue), true
			}
		}
	}
	return 0, false
}

// path is the request's path and query: url.path and url.query (current
// conventions), http.target (older), or the path of url.full or http.url.
func (a attributes) path() string {
	if p := a.text("url.path"); p != "" {
		if q := a.text("url.query"); q != "" {
			return p + "?" + q
		}
		return p
	}
	if target := a.text("http.target"); target != "" {
		return target
	}
	if full := a.text(fullURLKeys...); full != "" {
		if u, err := url.Parse(full); err == nil && u.Path != "" {
			return u.RequestURI()
		}
	}
	return ""
}

// clientIP is the client's address when one of clientKeys holds an IP
// address; client.address may also be a host name, which is not recorded.
func (a attributes) clientIP() string {
	for _, k := range clientKeys {
		if ip, err := netip.ParseAddr(a.text(k)); err == nil {
			return ip.Unmap().String()
		}
	}
	return ""
}

// headers are the attributes under prefix ("http.request.header.content-type"),
// by canonical header name, values in attribute order. Older SDKs write the
// name with _ for -.
func (a attributes) headers(prefix string) map[string][]string {
	var h map[string][]string
	for _, kv := range a.kvs {
		name, ok := strings.CutPrefix(kv.GetKey(), prefix)
		if !ok || name == "" || a.byKey[kv.GetKey()] != kv.GetValue() {
			continue // not a header, or a repeated key
		}
		v := kv.GetValue()
		name = textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
		var values []string
		if arr := v.GetArrayValue(); arr != nil {
			for _, item := range arr.GetValues() {
				if s, ok := scalarText(item); ok {
					values = append(values, s)
				}
			}
		} else if s, ok := scalarText(v); ok {
			values = []string{s}
		}
		if len(values) == 0 {
			continue
		}
		if h == nil {
			h = map[string][]string{}
		}
		h[name] = append(h[name], values...)
	}
	return h
}

// stringAttr is the string value of key among kvs, "" if absent.
func stringAttr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return strings.TrimSpace(kv.GetValue().GetStringValue())
		}
	}
	return ""
}

package otlp

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// MaxMessages bounds the protobuf messages of one export (spans, attributes,
// their values, events, links...), counted before decoding. Decoding costs
// about a hundred bytes per message whatever its size: a body of two-byte
// attributes takes over fifty times its size (BenchmarkDecodeTheDensestBody),
// so the body limit alone does not bound memory. 512 spans of 128 attributes,
// the SDKs' default batch and attribute limit, hold about 140,000.
const MaxMessages = 1_000_000

// maxDepth is how deep a count follows nested messages; deeper input is left
// to the decoder, which refuses nesting past its own limit (10,000).
const maxDepth = 10_000

var requestDescriptor = (&coltracepb.ExportTraceServiceRequest{}).ProtoReflect().Descriptor()

// countMessages counts the messages nested in raw, the wire encoding of an
// ExportTraceServiceRequest, as the request's schema says which fields are
// messages; it stops once the count passes limit. It allocates nothing and
// leaves malformed input to the decoder.
func countMessages(raw []byte, limit int) int {
	n := 0
	var walk func(b []byte, md protoreflect.MessageDescriptor, depth int) bool
	walk = func(b []byte, md protoreflect.MessageDescriptor, depth int) bool {
		if depth > maxDepth {
			return false
		}
		fields := md.Fields()
		for len(b) > 0 {
			num, typ, tagLen := protowire.ConsumeTag(b)
			if tagLen < 0 {
				return true
			}
			b = b[tagLen:]
			valueLen := protowire.ConsumeFieldValue(num, typ, b)
			if valueLen < 0 {
				return true
			}
			if fd := fields.ByNumber(num); typ == protowire.BytesType && fd != nil && fd.Kind() == protoreflect.MessageKind {
				value, _ := protowire.ConsumeBytes(b)
				if n++; n > limit || !walk(value, fd.Message(), depth+1) {
					return false
				}
			}
			b = b[valueLen:]
		}
		return true
	}
	walk(raw, requestDescriptor, 0)
	return n
}

// countObjects counts the JSON objects in raw (braces outside strings), an
// upper bound of the messages it decodes to; it stops once the count passes
// limit. Malformed input is left to the decoder.
func countObjects(raw []byte, limit int) int {
	n := 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			if n++; n > limit {
				return n
			}
		}
	}
	return n
}

package otlp_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/reqlog/reqlog/adapters/otlp"
)

// messagesIn counts the messages nested in m after decoding, the way the
// counts before decoding must see them.
func messagesIn(m protoreflect.Message) int {
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := range v.List().Len() {
				n += 1 + messagesIn(v.List().Get(i).Message())
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			n += 1 + messagesIn(v.Message())
		}
		return true
	})
	return n
}

func sampleRequest() *coltracepb.ExportTraceServiceRequest {
	nested := &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
		{Value: &commonpb.AnyValue_StringValue{StringValue: `{"a":"}"}`}},
		{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{str("k", "v")}}}},
	}}}}
	s := serverSpan("/a", 200, time.Minute)
	s.Attributes = append(s.Attributes, &commonpb.KeyValue{Key: "nested", Value: nested})
	s.Events = []*tracepb.Span_Event{{Name: "e", Attributes: []*commonpb.KeyValue{integer("n", 1)}}}
	s.Status = &tracepb.Status{Message: "{{{"}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{resourceOf("shop", s, serverSpan("/b", 500, time.Second))}}
}

func TestCountsBeforeDecodingMatchTheDecodedMessages(t *testing.T) {
	req := sampleRequest()
	want := messagesIn(req.ProtoReflect())
	raw, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := otlp.CountMessages(raw, 1<<30); got != want {
		t.Errorf("protobuf: counted %d messages, decoding makes %d", got, want)
	}
	js, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// Every message but the outermost is an object; empty ones may be left out.
	if got := otlp.CountObjects(js, 1<<30); got < want {
		t.Errorf("JSON: counted %d objects, decoding makes %d messages: the count must bound them", got, want)
	}
	if got := otlp.CountMessages(raw, 3); got != 4 {
		t.Errorf("limited count %d, want it to stop just past the limit", got)
	}
}

// Whatever the bytes, the count before decoding never panics, and bounds what
// decoding makes of what it accepts.
func FuzzCountMessages(f *testing.F) {
	raw, _ := proto.Marshal(sampleRequest())
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := otlp.CountMessages(raw, 1<<30)
		req := &coltracepb.ExportTraceServiceRequest{}
		if proto.Unmarshal(raw, req) != nil {
			return
		}
		if want := messagesIn(req.ProtoReflect()); got < want {
			t.Errorf("counted %d, decoding made %d", got, want)
		}
	})
}

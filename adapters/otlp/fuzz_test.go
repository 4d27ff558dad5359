package otlp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Whatever an export holds, the receiver answers it as OTLP says (a response,
// or a Status for bad data) and stores only valid messages; it never panics.
func FuzzExport(f *testing.F) {
	raw, _ := proto.Marshal(sampleRequest())
	js, _ := protojson.Marshal(sampleRequest())
	f.Add(raw, false)
	f.Add(js, true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"0",`+
		`"attributes":[{"key":"http.method","value":{"stringValue":"G\u0000T"}},{"key":"http.target","value":{"bytesValue":"/w=="}},`+
		`{"key":"http.status_code","value":{"doubleValue":1e300}}]}]}]}]}`), true)
	policy := domain.DefaultPolicy()
	store := memory.New()
	ingest := app.NewIngester(store, policy, app.SystemClock{})
	rc := otlp.New(otlp.Config{MaxBodyBytes: 1 << 20}, func(p domain.Principal) ports.ExchangeSubmitter {
		return app.LocalSubmitter{Ingester: ingest, Principal: p}
	}, nil, nil)
	principal := domain.Principal{Scope: domain.Scope{Account: "fuzz", Domain: domain.DomainTest}}
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		contentType := "application/x-protobuf"
		if isJSON {
			contentType = "application/json"
		}
		r := httptest.NewRequest(http.MethodPost, otlp.Path, bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		rc.ServeTraces(w, r, principal)
		unmarshal := proto.Unmarshal
		if isJSON {
			unmarshal = protojson.Unmarshal
		}
		switch w.Code {
		case http.StatusOK:
			if err := unmarshal(w.Body.Bytes(), &coltracepb.ExportTraceServiceResponse{}); err != nil {
				t.Fatalf("200 with a body that is no response: %v", err)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %q", w.Code, w.Body.Bytes())
		}
	})

}

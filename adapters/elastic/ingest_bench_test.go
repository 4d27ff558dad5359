package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/internal/record"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkIngestFullText: what the full-text field costs a bulk request of
// 100 benchMessages on the real node, alternating in one run between an index
// of the current mappings (documents with the text field) and one without the
// field (documents as record.AppendJSON writes them). ratio is the time of a
// bulk request with the field over one without.
//
//	go test -run '^$' -bench IngestFullText -benchtime 100x -count 3 ./adapters/elastic/
func BenchmarkIngestFullText(b *testing.B) {
	base := elastictest.URL(b)
	var withoutText map[string]any
	if err := json.Unmarshal(existingMappings, &withoutText); err != nil {
		b.Fatal(err)
	}
	delete(withoutText["properties"].(map[string]any), "text")
	variants := []struct {
		name     string
		mappings any
		append   func(dst []byte, i int) []byte
	}{
		{"with-text", json.RawMessage(mappings), func(dst []byte, i int) []byte { return appendDocument(dst, benchMessage(i)) }},
		{"without-text", withoutText, func(dst []byte, i int) []byte { return record.AppendJSON(dst, benchMessage(i)) }},
	}
	send := func(b *testing.B, method, path string, body []byte) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		reply, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 || bytes.Contains(reply[:min(len(reply), 64)], []byte(`"errors":true`)) {
			b.Fatalf("%s %s: %d %.300s", method, path, res.StatusCode, reply)
		}
	}
	bulks := make([][]byte, len(variants))
	next := 0
	// one sends a bulk request of 100 new messages into variant v's index.
	one := func(b *testing.B, v int) time.Duration {
		index := "reqlog-bench-ingest-" + variants[v].name
		bulk := bulks[v][:0]
		for range 100 {
			bulk = fmt.Appendf(bulk, `{"create":{"_index":%q}}`+"\n", index)
			bulk = append(variants[v].append(bulk, next), '\n')
			next++
		}
		bulks[v] = bulk
		began := time.Now()
		send(b, http.MethodPost, "/_bulk?filter_path=errors", bulk)
		return time.Since(began)
	}
	for _, v := range variants {
		index := "reqlog-bench-ingest-" + v.name
		body, _ := json.Marshal(map[string]any{"settings": map[string]any{"number_of_shards": 1, "number_of_replicas": 0}, "mappings": v.mappings})
		send(b, http.MethodPut, "/"+index, body)
		b.Cleanup(func() { send(b, http.MethodDelete, "/"+index, nil) })
	}
	for range 30 { // the node's JIT warms up on both
		for v := range variants {
			one(b, v)
		}
	}
	// Alternating, so that the machine's load weighs on both alike.
	spent := make([]time.Duration, len(variants))
	for b.Loop() {
		for v := range variants {
			spent[v] += one(b, v)
		}
	}
	for v, variant := range variants {
		b.ReportMetric(float64(spent[v].Milliseconds())/float64(b.N), "ms/bulk-"+variant.name)
	}
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "ratio")
}

// benchMessage is benchMessages' message with an id and body of its own.
func benchMessage(i int) (m domain.Message) {
	m = benchMessages(1)[0]
	m.ID = fmt.Sprintf("msg_%020d", i)
	m.Response.Body = fmt.Sprintf(`{"n":%d,`, i) + m.Response.Body[1:]
	return m
}

package esindex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// BenchmarkIngestFullText: what the full-text field costs a bulk request of
// 100 fixtures.TrafficMessages on the real node, alternating in one run between an index
// of template version 2 (documents with the text field, excluded from
// _source: "with-text"), one without any full-text field (documents as
// record.AppendJSON writes them, request and response not indexed), one of
// the current mappings (the texts indexed in place: "in-place") and the
// alternatives the layout was chosen against. ratio is the time of a bulk request with the text field
// over one without; ratio-<name> the same for each other variant:
//
//   - in-place: mappings.json, the texts indexed where the record stores them;
//   - copy-to: the texts copied into the text field by the node (copy_to);
//   - kept: the text field kept in _source (no source filtering, bodies
//     stored twice);
//   - go-words: the texts split into lower-cased words here, the field
//     analysed by the whitespace analyzer (the tokenizer's share);
//   - no-positions: index_options docs (no phrase query possible);
//   - unique-words: each distinct word of the message once, in one value,
//     no positions (a candidate index: a phrase would be checked in Go);
//   - carried: the field sent and filtered out of _source, not indexed.
//
// The words here are runs of letters, digits and _ (benchWords): the
// figures are costs, not a search design. $REQLOG_BENCH_VARIANTS (names,
// comma-separated) keeps only those variants besides with-text and
// without-text.
//
//	go test -run '^$' -bench IngestFullText -benchtime 60x -count 3 ./adapters/elastic/esindex/
func BenchmarkIngestFullText(b *testing.B) {
	base := elastictest.URL(b)
	// v2 is template version 2's mappings: legacyMappings, text excluded
	// from _source.
	v2 := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(legacyMappings, &m); err != nil {
			b.Fatal(err)
		}
		m["_source"] = map[string]any{"excludes": []string{"text"}}
		return m
	}
	withoutText := v2()
	delete(withoutText, "_source")
	delete(withoutText["properties"].(map[string]any), "text")
	// withField is v2 with field as "text", excluded from _source or not.
	withField := func(field map[string]any, excluded bool) any {
		m := v2()
		m["properties"].(map[string]any)["text"] = field
		if !excluded {
			delete(m, "_source")
		}
		return m
	}
	textField := func(analyzer, indexOptions string) map[string]any {
		return map[string]any{"type": "text", "analyzer": analyzer, "norms": false, "index_options": indexOptions}
	}
	asIs := func(text string) []string { return []string{text} }
	joined := func(text string) []string { return []string{strings.Join(benchWords(text), " ")} }
	asStored := func(dst []byte, i int) []byte { return esdoc.Append(dst, benchMessage(i)) }
	variants := []struct {
		name     string
		mappings any
		append   func(dst []byte, i int) []byte
	}{
		{"with-text", v2(), func(dst []byte, i int) []byte { return esdoc.AppendWithText(dst, benchMessage(i)) }},
		{"without-text", withoutText, asStored},
		{"in-place", json.RawMessage(mappings), asStored},
		{"copy-to", copyToMappings(b), asStored},
		{"kept", withField(textField("standard", "positions"), false), func(dst []byte, i int) []byte { return appendBenchDocument(dst, i, asIs) }},
		{"go-words", withField(textField("whitespace", "positions"), true), func(dst []byte, i int) []byte { return appendBenchDocument(dst, i, joined) }},
		{"no-positions", withField(textField("standard", "docs"), true), func(dst []byte, i int) []byte { return appendBenchDocument(dst, i, asIs) }},
		{"unique-words", withField(textField("whitespace", "docs"), true), func(dst []byte, i int) []byte { return appendUniqueWords(dst, i) }},
		{"carried", withField(map[string]any{"type": "text", "index": false}, true), func(dst []byte, i int) []byte { return appendBenchDocument(dst, i, asIs) }},
	}
	if only := os.Getenv("REQLOG_BENCH_VARIANTS"); only != "" {
		variants = slices.DeleteFunc(variants, func(v struct {
			name     string
			mappings any
			append   func(dst []byte, i int) []byte
		}) bool {
			return v.name != "with-text" && v.name != "without-text" && !slices.Contains(strings.Split(only, ","), v.name)
		})
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
	for v := 2; v < len(variants); v++ {
		b.ReportMetric(float64(spent[v])/float64(spent[1]), "ratio-"+variants[v].name)
	}
}

// copyToMappings are mappings.json with the searched texts copied into the
// text field by the node (copy_to) instead of indexed in place.
func copyToMappings(b *testing.B) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(mappings, &m); err != nil {
		b.Fatal(err)
	}
	props := m["properties"].(map[string]any)
	copied := map[string]any{"type": "text", "index": false, "copy_to": "text"}
	props["path"] = map[string]any{"type": "keyword", "copy_to": "text"}
	for _, side := range []string{"request", "response"} {
		content := props[side].(map[string]any)["properties"].(map[string]any)
		content["body"] = copied
		content["header"].(map[string]any)["properties"].(map[string]any)["values"] = copied
	}
	return m
}

// appendBenchDocument appends message i with the values values makes of
// each searched text as its text field.
func appendBenchDocument(dst []byte, i int, values func(string) []string) []byte {
	m := benchMessage(i)
	dst = record.AppendJSONMembers(dst, m)
	dst = append(dst, `,"text":[`...)
	first := true
	domain.SearchedTexts(m, func(text string) bool {
		for _, v := range values(text) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonbytes.AppendString(dst, v)
		}
		return true
	})
	return append(dst, "]}"...)
}

// appendUniqueWords appends message i with each distinct word of its
// searched texts once, in one value.
func appendUniqueWords(dst []byte, i int) []byte {
	m := benchMessage(i)
	seen := map[string]bool{}
	var words []string
	domain.SearchedTexts(m, func(text string) bool {
		for _, w := range benchWords(text) {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
		return true
	})
	dst = record.AppendJSONMembers(dst, m)
	dst = append(dst, `,"text":`...)
	dst = jsonbytes.AppendString(dst, strings.Join(words, " "))
	return append(dst, '}')
}

// benchWords are the lower-cased runs of letters, digits and _ of text.
func benchWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
}

// benchMessage is fixtures.TrafficMessages' message with an id and body of its own.
func benchMessage(i int) (m domain.Message) {
	m = fixtures.TrafficMessages(1)[0]
	m.ID = fmt.Sprintf("msg_%020d", i)
	m.Response.Body = fmt.Sprintf(`{"n":%d,`, i) + m.Response.Body[1:]
	return m
}

package conformance

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// apiExportColumns are the CSV export's columns of the contract.
var apiExportColumns = []string{"created_at", "id", "reference", "name", "method", "path", "status_code",
	"duration_ms", "ip_address", "request.size", "response.size"}

// export reads GET /v1/messages/export with query and checks that it is a
// download.
func (e *apiEnv) export(t *testing.T, key APIKey, query url.Values) apiReply {
	t.Helper()
	target := "/v1/messages/export"
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r := e.get(t, key, target)
	if r.status != http.StatusOK {
		t.Fatalf("export: %s", r)
	}
	disposition, params, err := mime.ParseMediaType(r.header.Get("Content-Disposition"))
	if err != nil || disposition != "attachment" || params["filename"] == "" {
		t.Errorf("Content-Disposition %q, want attachment with a filename: %s", r.header.Get("Content-Disposition"), r)
	}
	return r
}

// exportNDJSON reads an NDJSON export: one message object per line, each line
// ended by a newline.
func (e *apiEnv) exportNDJSON(t *testing.T, key APIKey, query url.Values) []map[string]any {
	t.Helper()
	r := e.export(t, key, query)
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); !slices.Contains([]string{"application/x-ndjson", "application/ndjson", "application/jsonl"}, mt) {
		t.Errorf("an NDJSON export has Content-Type %q", r.header.Get("Content-Type"))
	}
	if len(r.raw) > 0 && r.raw[len(r.raw)-1] != '\n' {
		t.Fatalf("the export does not end with a newline: %s", r)
	}
	var msgs []map[string]any
	for i, line := range bytes.Split(bytes.TrimSuffix(r.raw, []byte("\n")), []byte("\n")) {
		if len(r.raw) == 0 {
			break
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Fatalf("line %d is not one JSON value (%v): %.300s", i+1, err, line)
		}
		msgs = append(msgs, apiCheckMessage(t, v, ""))
	}
	return msgs
}

// exportCSV reads a CSV export and returns its rows after the header.
func (e *apiEnv) exportCSV(t *testing.T, key APIKey, query url.Values) [][]string {
	t.Helper()
	query = apiWith(query, "format", "csv")
	query.Set("format", "csv")
	r := e.export(t, key, query)
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "text/csv" {
		t.Errorf("a CSV export has Content-Type %q, want text/csv", r.header.Get("Content-Type"))
	}
	reader := csv.NewReader(bytes.NewReader(r.raw))
	reader.FieldsPerRecord = len(apiExportColumns)
	records, err := reader.ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV of %d columns (%v): %s", len(apiExportColumns), err, r)
	}
	if len(records) == 0 || !slices.Equal(records[0], apiExportColumns) {
		t.Fatalf("the CSV header is %q, want %q", records[:min(len(records), 1)], apiExportColumns)
	}
	return records[1:]
}

// apiWantCSVRow compares one CSV row with the message fetch returns.
func apiWantCSVRow(t *testing.T, row []string, m map[string]any) {
	t.Helper()
	want := []string{m["created_at"].(string), m["id"].(string), m["reference"].(string), m["name"].(string),
		m["method"].(string), m["path"].(string), strconv.Itoa(apiInt(t, m, "status_code")), "",
		m["ip_address"].(string), strconv.Itoa(apiInt(t, m, "request.size")), strconv.Itoa(apiInt(t, m, "response.size"))}
	if ms, has := apiDurationMS(t, m); has {
		got, err := strconv.ParseFloat(row[7], 64)
		if err != nil || got != ms {
			t.Errorf("CSV duration_ms %q, want %v", row[7], ms)
		}
		want[7] = row[7]
	}
	if !slices.Equal(row, want) {
		t.Errorf("CSV row\n %q\nwant\n %q", row, want)
	}
}

func apiTestExport(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Hour)
	const count = 130 // more than a page of fetch
	statuses := []int{200, 301, 404, 500, 201}
	var items []any
	for i := range count {
		edits := map[string]any{"path": fmt.Sprintf("/v1/orders/%d", i), "response.status_code": statuses[i%len(statuses)]}
		if i%2 == 0 {
			edits["duration_ms"] = float64(i) + 0.25
		}
		switch i {
		case 7: // every CSV quoting rule
			edits["name"], edits["path"] = `shop, "eu"`, `/v1/orders?a=1,2&b="x"`
		case 8:
			edits["name"], edits["request.body"] = "naïve café", `{"order":"ord_e4p0rt","password":"s3cret"}`
		}
		items = append(items, apiItem(at.Add(time.Duration(i/3)*time.Second), edits))
	}
	var ids []string
	for first := 0; first < count; first += 50 {
		ids = append(ids, apiIDs(e.ingestBatch(t, apiAcmeLive, items[first:min(first+50, count)], min(50, count-first)))...)
	}
	listed := e.reveal(t, apiAcmeLive, ids...)
	// Submitted now and not yet visible: never exported.
	e.ingestOne(t, apiAcmeLive, apiItem(e.clock.Now().Add(-time.Second), nil))

	t.Run("NDJSON is fetch's objects, newest first", func(t *testing.T) {
		exported := e.exportNDJSON(t, apiAcmeLive, nil)
		if got, want := apiListedIDs(exported), apiListedIDs(listed); !slices.Equal(got, want) {
			t.Fatalf("the export holds %d messages, want the %d listed, in the same order", len(got), len(want))
		}
		for i, m := range exported {
			if !reflect.DeepEqual(m, listed[i]) {
				t.Errorf("exported\n %s\nlisted\n %s", apiShow(m), apiShow(listed[i]))
			}
		}
		for _, i := range []int{0, 7, 8} {
			id := exported[i]["id"].(string)
			if fetched := e.fetch(t, apiAcmeLive, id); !reflect.DeepEqual(exported[i], fetched) {
				t.Errorf("exported\n %s\nfetched\n %s", apiShow(exported[i]), apiShow(fetched))
			}
		}
	})

	t.Run("CSV", func(t *testing.T) {
		rows := e.exportCSV(t, apiAcmeLive, nil)
		if len(rows) != len(listed) {
			t.Fatalf("%d CSV rows, want %d", len(rows), len(listed))
		}
		for i, row := range rows {
			apiWantCSVRow(t, row, listed[i])
		}
	})

	t.Run("limit and filters", func(t *testing.T) {
		for _, query := range []url.Values{
			{"limit": {"5"}},
			{"limit": {"1"}, "format": {"ndjson"}},
			{"q": {"ord_e4p0rt"}},
			{"q": {"s3cret"}}, // redacted: never found
			{"min_duration_ms": {"100"}, "status_code": {"2xx"}},
			{"path_prefix": {"/v1/orders/1"}, "limit": {"7"}},
			{"name": {`shop, "eu"`}},
			{"name": {"nobody"}},
		} {
			want := e.listAll(t, apiAcmeLive, apiWith(query, "limit", "100"))
			if limit, err := strconv.Atoi(query.Get("limit")); err == nil {
				want = want[:min(limit, len(want))]
			}
			if got := apiListedIDs(e.exportNDJSON(t, apiAcmeLive, query)); !slices.Equal(got, apiListedIDs(want)) {
				t.Errorf("export of %s holds %q, want %q", query.Encode(), got, apiListedIDs(want))
			}
			rows := e.exportCSV(t, apiAcmeLive, query)
			if len(rows) != len(want) {
				t.Errorf("CSV export of %s has %d rows, want %d", query.Encode(), len(rows), len(want))
			}
		}
	})

	t.Run("empty", func(t *testing.T) {
		r := e.export(t, apiAcmeTest, nil)
		if len(r.raw) != 0 {
			t.Errorf("an empty NDJSON export holds %q", r.raw)
		}
		if rows := e.exportCSV(t, apiAcmeTest, nil); len(rows) != 0 {
			t.Errorf("an empty CSV export has rows %q", rows)
		}
	})
}

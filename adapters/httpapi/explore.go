package httpapi

import (
	"encoding/csv"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

const msgStats = "successfully computed statistics"

// queryValues parses the raw query string, answering a malformed one itself.
func queryValues(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, apiError{status: http.StatusBadRequest, message: "the query string is malformed"})
		return nil, false
	}
	return values, true
}

// stats answers GET /v1/stats.
func (a *api) stats(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q, err := a.statistics.ParseQuery(values)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	s, err := a.statistics.Compute(r.Context(), principalOf(r.Context()), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgStats, Data: toStatsJSON(s)})
}

type statsJSON struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	Interval string        `json:"interval"`
	Total    totalJSON     `json:"total"`
	Buckets  []bucketJSON  `json:"buckets"`
	TopPaths []topPathJSON `json:"top_paths"`
	TopNames []topNameJSON `json:"top_names"`
	// TopRoutes ranks route templates; messages without one are not in it.
	TopRoutes []topRouteJSON `json:"top_routes"`
	// RollupsOnlyBefore: what was created before it is counted from the
	// rollups alone, its messages gone (stats.Stats.RollupsOnlyBefore).
	RollupsOnlyBefore string `json:"rollups_only_before,omitempty"`
}

type totalJSON struct {
	Count int64 `json:"count"`
	// Dropped is how many of Count ingest rules dropped (tallies).
	Dropped  int64          `json:"dropped"`
	Status   statusJSON     `json:"status"`
	Duration *durationsJSON `json:"duration_ms"`
}

type bucketJSON struct {
	Start string `json:"start"`
	totalJSON
}

type statusJSON struct {
	C1xx int64 `json:"1xx"`
	C2xx int64 `json:"2xx"`
	C3xx int64 `json:"3xx"`
	C4xx int64 `json:"4xx"`
	C5xx int64 `json:"5xx"`
}

type durationsJSON struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

type topPathJSON struct {
	Path   string `json:"path"`
	Count  int64  `json:"count"`
	Errors int64  `json:"errors"`
}

type topRouteJSON struct {
	Route    string         `json:"route"`
	Count    int64          `json:"count"`
	Errors   int64          `json:"errors"`
	Duration *durationsJSON `json:"duration_ms"`
}

type topNameJSON struct {
	Name   string `json:"name"`
	Count  int64  `json:"count"`
	Errors int64  `json:"errors"`
}

func toStatsJSON(s stats.Stats) statsJSON {
	out := statsJSON{From: domain.FormatTime(s.From), To: domain.FormatTime(s.To), Interval: s.Interval.Name,
		Total: toTotalJSON(s.Total), Buckets: make([]bucketJSON, len(s.Buckets)),
		TopPaths: make([]topPathJSON, len(s.TopPaths)), TopNames: make([]topNameJSON, len(s.TopNames)),
		TopRoutes: make([]topRouteJSON, len(s.TopRoutes))}
	if !s.RollupsOnlyBefore.IsZero() {
		out.RollupsOnlyBefore = domain.FormatTime(s.RollupsOnlyBefore)
	}
	for i, b := range s.Buckets {
		out.Buckets[i] = bucketJSON{Start: domain.FormatTime(b.Start), totalJSON: toTotalJSON(b)}
	}
	for i, kc := range s.TopPaths {
		out.TopPaths[i] = topPathJSON{Path: kc.Key, Count: kc.Count, Errors: kc.Errors}
	}
	for i, kc := range s.TopNames {
		out.TopNames[i] = topNameJSON{Name: kc.Key, Count: kc.Count, Errors: kc.Errors}
	}
	for i, r := range s.TopRoutes {
		out.TopRoutes[i] = topRouteJSON{Route: r.Route, Count: r.Count, Errors: r.Errors,
			Duration: toTotalJSON(stats.Bucket{Duration: r.Duration}).Duration}
	}
	return out
}

func toTotalJSON(b stats.Bucket) totalJSON {
	t := totalJSON{Count: b.Count, Dropped: b.Dropped, Status: statusJSON{b.Status[0], b.Status[1], b.Status[2], b.Status[3], b.Status[4]}}
	if d := b.Duration; d.Count > 0 {
		t.Duration = &durationsJSON{Count: d.Count, P50: roundMicro(d.P50), P95: roundMicro(d.P95), P99: roundMicro(d.P99)}
	}
	return t
}

// roundMicro rounds milliseconds to the microsecond, as durations are stored: an
// aggregating store's estimate (41.20000000001) is written as 41.2, never with
// an exponent.
func roundMicro(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// exportColumns are the CSV export's columns, in order.
var exportColumns = []string{"created_at", "id", "reference", "name", "method", "path", "status_code",
	"duration_ms", "ip_address", "request.size", "response.size"}

// export answers GET /v1/messages/export: the export's pages are encoded and
// flushed one by one, so memory stays bounded whatever the count. Status and
// headers wait for the first page, so a store that fails at once still gets its
// error reply. A store that fails later, with the 200 sent, cuts the connection:
// the reply then lacks its end (the last chunk of HTTP/1.1, END_STREAM of
// HTTP/2), so no client takes a partial export for a whole one. Exports are
// bounded in number per principal and in all (429 beyond) and held to a pace
// (exportPace), so stalled readers cannot pin memory.
func (a *api) export(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q, err := domain.ParseExportQuery(values)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	release, busy := a.exports.take(limiterKey(principalOf(r.Context())))
	if busy != nil {
		writeError(w, *busy)
		return
	}
	defer release()
	if r.Method == http.MethodHead {
		q.Max = 1 // the same status and headers as GET, without reading everything
	}
	out := newExportWriter(w, q.Format, a.exports.limits)
	res, err := a.exporter.Export(r.Context(), principalOf(r.Context()), q, out.page)
	if err == nil {
		err = out.finish(res)
	}
	switch {
	case err == nil:
	case !out.started:
		a.fail(w, r, err)
	case errors.Is(err, errSlowReader):
		a.log.Info("export cut: its client read more slowly than REQLOG_EXPORT_MIN_RATE and REQLOG_EXPORT_STALL_TIMEOUT allow",
			zap.String("request_id", requestID(r.Context())))
	case errors.Is(err, errClientGone) || r.Context().Err() != nil:
		// The client left with the 200 sent, which the metrics count, as
		// nginx logs an aborted download: nobody to tell.
		a.log.Debug("the client went away during its export", zap.Error(err),
			zap.String("request_id", requestID(r.Context())))
	default:
		a.log.Warn("export failed after its reply began; connection cut", zap.Error(err),
			zap.String("request_id", requestID(r.Context())))
		panic(http.ErrAbortHandler)
	}
}

// ExpiredTrailer is the export's trailer naming the instant before which
// messages may be missing, having expired while the export ran
// (app.ExportResult.ExpiredBefore); absent when none can be. A header cannot
// say it: it is sent before the export is read.
const ExpiredTrailer = "Reqlog-Export-Expired-Before"

// errClientGone is a failed write of the export: the client left.
var errClientGone = errors.New("export: client gone")

// exportChunkBytes is how much encoded export gathers before it is written.
const exportChunkBytes = 64 << 10

// exportWriter encodes export pages onto the reply, a chunk at a time, each
// write held to the export's pace.
type exportWriter struct {
	w       http.ResponseWriter
	pace    exportPace
	format  string
	started bool
	buf     []byte
	csv     *csv.Writer // writes into buf
	record  []string
}

func newExportWriter(w http.ResponseWriter, format string, limits ExportLimits) *exportWriter {
	return &exportWriter{w: w, pace: exportPace{rc: http.NewResponseController(w), limits: limits}, format: format}
}

// Write appends to the chunk being gathered: the CSV encoder writes here.
func (e *exportWriter) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	return len(p), nil
}

// start sends status and headers, and the CSV header line.
func (e *exportWriter) start() {
	e.started = true
	h := e.w.Header()
	switch e.format {
	case domain.ExportCSV:
		h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
		h.Set("Content-Disposition", `attachment; filename="reqlog-export.csv"`)
	default:
		h.Set("Content-Type", "application/x-ndjson; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="reqlog-export.ndjson"`)
	}
	h.Set("Trailer", ExpiredTrailer)
	e.w.WriteHeader(http.StatusOK)
	if e.format == domain.ExportCSV {
		// Lines end in LF, not RFC 4180's CRLF: with UseCRLF, encoding/csv also
		// turns a newline inside a quoted field into CRLF, changing the data.
		// Spreadsheets and CSV readers take either.
		e.csv = csv.NewWriter(e)
		e.record = make([]string, len(exportColumns))
		_ = e.csv.Write(exportColumns)
	}
}

// page encodes one page of the export and writes it, in chunks so the buffer
// stays small whatever the page holds, then flushes it to the client.
func (e *exportWriter) page(msgs []domain.Message) error {
	if !e.started {
		e.start()
	}
	for _, m := range msgs {
		if e.csv != nil {
			_ = e.csv.Write(e.csvRecord(m)) // into e.buf, which cannot fail
		} else {
			e.buf = append(appendMessage(e.buf, m), '\n')
		}
		if len(e.buf) >= exportChunkBytes {
			if err := e.writeChunk(); err != nil {
				return err
			}
		}
	}
	return e.flush()
}

// writeChunk writes what is gathered (the CSV encoder's buffer included).
func (e *exportWriter) writeChunk() error {
	if e.csv != nil {
		e.csv.Flush()
	}
	if len(e.buf) == 0 {
		return nil
	}
	err := e.pace.send(len(e.buf), func() error { _, err := e.w.Write(e.buf); return err })
	e.buf = e.buf[:0]
	return err
}

// flush writes what is gathered and sends it to the client.
func (e *exportWriter) flush() error {
	if err := e.writeChunk(); err != nil {
		return err
	}
	return e.pace.send(0, func() error {
		if err := e.pace.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	})
}

// finish ends an export; one of nothing still has its headers (and CSV header).
// The trailer says whether messages may have expired while it ran.
func (e *exportWriter) finish(res app.ExportResult) error {
	if !e.started {
		e.start()
	}
	if !res.ExpiredBefore.IsZero() {
		e.w.Header().Set(ExpiredTrailer, domain.FormatTime(res.ExpiredBefore))
	}
	return e.flush()
}

func (e *exportWriter) csvRecord(m domain.Message) []string {
	rec := e.record
	rec[0] = domain.FormatTime(m.CreatedAt)
	rec[1], rec[2], rec[3], rec[4], rec[5] = m.ID, m.Reference, m.Name, m.Method, m.Path
	rec[6] = strconv.Itoa(m.StatusCode)
	rec[7] = ""
	if ms, ok := m.DurationMS(); ok {
		rec[7] = strconv.FormatFloat(ms, 'f', -1, 64)
	}
	rec[8] = m.IPAddress
	rec[9], rec[10] = strconv.Itoa(m.Request.Size), strconv.Itoa(m.Response.Size)
	for i, cell := range rec {
		rec[i] = defuseFormula(cell)
	}
	return rec
}

// formulaStarts are the first characters that make a spreadsheet read a cell as
// a formula (OWASP, "CSV Injection").
const formulaStarts = "=+-@\t\r"

// defuseFormula prepends ' to a cell a spreadsheet would run as a formula, as
// OWASP advises. Every column goes through it: a name is any text, a method any
// HTTP token ("+X" and "-X" are tokens, and net/http hands them to a captured
// handler), and a store written by another version or by hand may hold anything.
// The numeric columns never start with "-": status codes, durations and sizes are
// validated non-negative before they are stored.
func defuseFormula(cell string) string {
	if cell != "" && strings.IndexByte(formulaStarts, cell[0]) >= 0 {
		return "'" + cell
	}
	return cell
}

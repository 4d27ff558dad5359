package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxNameLength is the longest application name, in characters after trimming.
const MaxNameLength = 200

// MaxPathLength is the longest path, in characters.
const MaxPathLength = 4096

// maxMethodLen is the longest method, from the contract.
const maxMethodLen = 32

// Submission is one validated, normalised exchange, before it gets an identity.
type Submission struct {
	Name       string
	IPAddress  string
	Method     string
	Path       string
	StatusCode int
	CreatedAt  time.Time
	Request    Content
	Response   Content
	// Duration and HasDuration: duration_ms, when submitted.
	Duration    time.Duration
	HasDuration bool
}

// Batch is a decoded POST body.
type Batch struct {
	Submissions []Submission
	// Multiple is true for the array and envelope shapes: the reply then lists
	// identities, and field errors are prefixed with the item index.
	Multiple bool
}

// ParseSubmissions decodes and validates a POST body in any of the contract's three
// shapes (one submission, an array of them, or {"messages": [...]}) at time now.
// Either every item is valid or a *ValidationError lists each bad field; a batch over
// MaxBatch items fails with an error wrapping ErrTooLarge.
// It builds the sets of masked headers and redacted fields on each call; a
// Parser builds them once.
func (p Policy) ParseSubmissions(body []byte, now time.Time) (Batch, error) {
	return p.Parser().ParseSubmissions(body, now)
}

// Parser parses POST bodies as Policy.ParseSubmissions does, with the policy's
// sets of masked headers and redacted fields built once, for a server that
// parses every POST under one policy. Get one from Policy.Parser: the zero
// Parser is the zero Policy's, which masks and redacts nothing.
type Parser struct {
	policy   Policy
	masked   map[string]bool
	redacted fieldSet
}

// Parser returns a Parser of p. It keeps the sets p has now: later changes to
// p's MaskedHeaders or RedactedFields do not reach it.
func (p Policy) Parser() Parser {
	return Parser{policy: p, masked: p.maskSet(), redacted: p.redactSet()}
}

// ParseSubmissions is Policy.ParseSubmissions under the parser's policy.
func (ps Parser) ParseSubmissions(body []byte, now time.Time) (Batch, error) {
	return ps.parse(body, now, true)
}

// parse is ParseSubmissions; without skipping, it scans nested values again
// instead of looking their ends up, as tests compare.
func (ps Parser) parse(body []byte, now time.Time, skipping bool) (Batch, error) {
	p := ps.policy
	sc := scratchPool.Get().(*scratch)
	defer sc.giveBack()
	shape, err := splitBody(body, p.MaxBatch, skipping, sc)
	if err != nil {
		return Batch{}, err
	}
	if shape.multiple && len(shape.items) == 0 {
		return Batch{}, invalid("the batch is empty: send at least one message")
	}
	v := validator{now: Micro(now), policy: p, masked: ps.masked, redacted: ps.redacted, sniff: p.Sniff, ends: shape.ends,
		scratch: sc}
	if v.sniff == nil {
		v.sniff = plainSniff
	}
	if !shape.multiple {
		fe := fieldErrors{}
		s := v.submission(&shape.single, false, &fe)
		if len(fe.list) > 0 {
			return Batch{}, &ValidationError{Message: "the submission is invalid", Fields: fe.list}
		}
		return Batch{Submissions: []Submission{s}}, nil
	}
	batch := Batch{Submissions: make([]Submission, len(shape.items)), Multiple: true}
	var all []FieldError
	for i, raw := range shape.items {
		fe := fieldErrors{prefix: fmt.Sprintf("[%d].", i)}
		if kindOf(raw) != kindObject {
			fe.list = append(fe.list, FieldError{Field: fmt.Sprintf("[%d]", i), Message: "must be a JSON object"})
		} else {
			obj := readMembers(raw, v.ends)
			batch.Submissions[i] = v.submission(&obj, shape.envelope, &fe)
		}
		all = append(all, fe.list...)
	}
	if len(all) > 0 {
		return Batch{}, &ValidationError{Message: "the batch is invalid: nothing was stored", Fields: all}
	}
	return batch, nil
}

// bodyShape is a POST body split into its items, undecoded.
type bodyShape struct {
	items []json.RawMessage // the array's or envelope's items
	// single holds the members of a lone submission, read once while looking for
	// "messages".
	single   members
	multiple bool // an array or an envelope
	envelope bool
	ends     valueEnds
}

// splitBody finds the shape of body, refusing more than maxBatch items.
// With skipping, the shape carries the ends of body's nested values, kept in
// sc until it is given back.
func splitBody(body []byte, maxBatch int, skipping bool, sc *scratch) (bodyShape, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return bodyShape{}, invalid("the request body is empty: send a JSON object or array")
	}
	rec := jsonRecorder{values: skipping, spans: sc.spans[:0]}
	verdict := checkJSON(trimmed, MaxNesting, &rec)
	sc.spans = rec.spans
	switch verdict {
	case jsonTooDeep:
		return bodyShape{}, invalid("the request body nests arrays and objects more than %d levels deep", MaxNesting)
	case jsonInvalid:
		return bodyShape{}, invalid("the request body is not valid JSON")
	}
	var ends valueEnds
	if skipping {
		if sc.ends == nil {
			sc.ends = make(valueEnds, len(rec.spans))
		}
		ends = sc.ends
		ends.add(trimmed, rec.spans)
	}
	switch trimmed[0] {
	case '[':
		items, err := batchItems(trimmed, maxBatch, ends)
		return bodyShape{items: items, multiple: true, ends: ends}, err
	case '{':
		// Members by their exact keys, not a struct: encoding/json matches struct
		// tags case-insensitively, and only the exact key "messages" makes an envelope.
		obj := readMembers(trimmed, ends)
		messages := obj[keyMessages]
		if messages == nil {
			return bodyShape{single: obj, ends: ends}, nil
		}
		if kindOf(messages) != kindArray {
			return bodyShape{}, &ValidationError{Message: "the submission is invalid",
				Fields: []FieldError{{Field: "messages", Message: "must be an array of messages"}}}
		}
		items, err := batchItems(messages, maxBatch, ends)
		return bodyShape{items: items, multiple: true, envelope: true, ends: ends}, err
	default:
		return bodyShape{}, invalid("the request body must be a JSON object or array")
	}
}

type validator struct {
	now      time.Time
	policy   Policy
	masked   map[string]bool
	redacted fieldSet
	sniff    Sniffer
	ends     valueEnds // of the body being decoded
	scratch  *scratch
}

// submission validates the members of one item. envelope items may use "app" for
// "name" and a top-level "status_code" for "response.status_code".
func (v validator) submission(obj *members, envelope bool, fe *fieldErrors) Submission {
	var s Submission
	nameField, nameKey := "name", keyName
	if envelope && isAbsent(obj[keyName]) && !isAbsent(obj[keyApp]) {
		nameField, nameKey = "app", keyApp
	}
	if name, ok := stringField(obj[nameKey], nameField, true, fe); ok {
		s.Name = strings.TrimSpace(name)
		if n := utf8.RuneCountInString(s.Name); n < 1 || n > MaxNameLength {
			fe.add(nameField, "must be 1 to %d characters after trimming spaces", MaxNameLength)
		}
	}
	s.CreatedAt = v.createdAt(obj[keyCreatedAt], fe)
	s.Method = method(obj[keyMethod], fe)
	if path, ok := stringField(obj[keyPath], "path", true, fe); ok {
		switch {
		case !strings.HasPrefix(path, "/"):
			fe.add("path", "must start with /")
		case utf8.RuneCountInString(path) > MaxPathLength:
			fe.add("path", "must be at most %d characters", MaxPathLength)
		default:
			s.Path = path
		}
	}
	if ip, ok := stringField(obj[keyIPAddress], "ip_address", false, fe); ok && ip != "" {
		if s.IPAddress, ok = canonicalIP(ip); !ok {
			fe.add("ip_address", "%s", errIPAddress)
		}
	}
	var topStatus json.RawMessage
	if envelope {
		topStatus = obj[keyStatusCode]
	}
	s.Duration, s.HasDuration = durationMS(obj[keyDurationMS], fe)
	s.Request, _ = v.content(obj[keyRequest], "request", false, nil, fe)
	s.Response, s.StatusCode = v.content(obj[keyResponse], "response", true, topStatus, fe)
	return s
}

// decodeBody decodes a body member into v's scratch buffer, valid until the next
// call: redactBody then makes the message's string from it in one copy, where
// decoding to a string and masking that would copy a redacted body twice.
func (v validator) decodeBody(raw json.RawMessage, path string, fe *fieldErrors) []byte {
	body := v.scratch.body[:0]
	switch {
	case isAbsent(raw):
	case kindOf(raw) != kindString:
		fe.add(path, "must be a string")
	default:
		body = appendUnquoted(presized(body, len(raw)), raw[1:len(raw)-1])
	}
	v.scratch.body = body
	return body
}

// presized is buf, or a new buffer for n bytes if buf has less room: what a
// literal of n bytes decodes to fits, but for invalid UTF-8.
func presized(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, 0, n)
	}
	return buf
}

// scratch holds what decoding writes before it makes the strings a message keeps,
// and the index of the body's values; pooled, it is reused from one POST to the
// next. A buffer that grew past maxPooledScratch bytes, or an index past
// maxPooledEnds values (a map never shrinks), is left to the collector.
type scratch struct {
	body, header []byte
	spans        []valueSpan
	ends         valueEnds
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

const (
	maxPooledScratch = 1 << 20
	maxPooledEnds    = 1 << 14
)

func (s *scratch) giveBack() {
	if len(s.ends) > maxPooledEnds {
		s.ends = nil
	}
	clear(s.ends) // it points into the body, which must not be kept alive
	if cap(s.body) <= maxPooledScratch && cap(s.header) <= maxPooledScratch && cap(s.spans)*16 <= maxPooledScratch {
		scratchPool.Put(s)
	}
}

// content validates the request or response object. For the response it also
// returns status_code, which an envelope item may carry at its top level instead.
func (v validator) content(raw json.RawMessage, field string, isResponse bool, topStatus json.RawMessage, fe *fieldErrors) (Content, int) {
	var inner members
	switch {
	case isAbsent(raw) && isResponse && !isAbsent(topStatus):
	case isAbsent(raw):
		fe.add(field, "is required")
		return Content{}, 0
	case kindOf(raw) != kindObject:
		fe.add(field, "must be an object")
		return Content{}, 0
	default:
		inner = readMembers(raw, v.ends)
	}
	var c Content
	body := v.decodeBody(inner[keyBody], field+".body", fe)
	c.Header = v.header(inner[keyHeader], field+".header", fe)
	c.Size = len(body)
	c.ContentType, c.Body = typeAndRedact(c.Header, body, v.sniff, v.redacted)
	if v.masked["Content-Type"] { // the header decoded every other masked value as Mask
		maskHeader(c.Header, v.masked)
	}

	status := 0
	if isResponse {
		statusRaw, statusField := inner[keyStatusCode], field+".status_code"
		if isAbsent(statusRaw) && !isAbsent(topStatus) {
			statusRaw, statusField = topStatus, "status_code"
		}
		status = statusCode(statusRaw, statusField, fe)
	}
	return c, status
}

// method reads the required method, upper-cased. The standard methods come
// without allocating: nearly every submission has one.
func method(raw json.RawMessage, fe *fieldErrors) string {
	var name []byte
	switch {
	case isAbsent(raw):
		fe.add("method", "is required")
		return ""
	case kindOf(raw) != kindString:
		fe.add("method", "must be a string")
		return ""
	case bytes.IndexByte(raw, '\\') >= 0:
		name = []byte(unquote(raw))
	default: // it decodes to itself, or holds invalid UTF-8, which no token does
		name = raw[1 : len(raw)-1]
	}
	switch {
	case !isToken(name):
		fe.add("method", "must be an HTTP method token such as GET or POST")
		return ""
	case len(name) > maxMethodLen:
		fe.add("method", "must be at most %d characters", maxMethodLen)
		return ""
	}
	var buf [maxMethodLen]byte
	upper := buf[:len(name)]
	for i, c := range name {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper[i] = c
	}
	for _, standard := range standardMethods {
		if string(upper) == standard {
			return standard
		}
	}
	return string(upper)
}

var standardMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"}

// MaxDuration bounds duration_ms: one day.
const MaxDuration = 24 * time.Hour

const errDurationMS = "must be a number of milliseconds from 0 to 86400000 (decimals allowed)"

// durationMS reads the optional duration_ms, kept to the microsecond (further
// decimals are dropped, as created_at's are).
func durationMS(raw json.RawMessage, fe *fieldErrors) (time.Duration, bool) {
	if isAbsent(raw) {
		return 0, false
	}
	d, ok := parseDurationMS(string(raw), kindOf(raw) == kindNumber)
	if !ok {
		fe.add("duration_ms", errDurationMS)
	}
	return d, ok
}

// parseDurationMS reads a non-negative decimal number of milliseconds up to
// MaxDuration; isNumber is false for anything but a JSON number.
func parseDurationMS(text string, isNumber bool) (time.Duration, bool) {
	if !isNumber {
		return 0, false
	}
	return parseMillis(text, truncate)
}

// parseMillis reads a decimal number of milliseconds from 0 to MaxDuration
// ("-0" is 0), rounding what lies below a microsecond as round says.
func parseMillis(text string, round rounding) (time.Duration, bool) {
	negative := strings.HasPrefix(text, "-")
	d, ok := parseDecimal(strings.TrimPrefix(text, "-"))
	if !ok {
		return 0, false
	}
	if first, n := d.digits(); negative {
		return 0, first == n // only a negative zero is allowed
	}
	micros, fits := d.micros(millisToMicros, round)
	// The bound holds for the exact value (86400000.0001 is over it) and is
	// checked in microseconds: in nanoseconds a huge value would wrap around.
	exact, _ := d.micros(millisToMicros, roundUp)
	if !fits || exact > MaxDuration.Microseconds() {
		return 0, false
	}
	return time.Duration(micros) * time.Microsecond, true
}

func statusCode(raw json.RawMessage, field string, fe *fieldErrors) int {
	if isAbsent(raw) {
		fe.add(field, "is required")
		return 0
	}
	code, ok := jsonInteger(raw)
	if !ok {
		fe.add(field, "must be an integer")
		return 0
	}
	if code < 100 || code > 599 {
		fe.add(field, "must be between 100 and 599")
		return 0
	}
	return int(code)
}

// stringField reads the member raw, reporting problems under path. An absent or
// null optional field is "".
func stringField(raw json.RawMessage, path string, required bool, fe *fieldErrors) (string, bool) {
	if isAbsent(raw) {
		if required {
			fe.add(path, "is required")
		}
		return "", !required
	}
	if kindOf(raw) != kindString {
		fe.add(path, "must be a string")
		return "", false
	}
	return unquote(raw), true
}

func (v validator) createdAt(raw json.RawMessage, fe *fieldErrors) time.Time {
	if isAbsent(raw) {
		fe.add("created_at", "is required")
		return time.Time{}
	}
	t, err := parseTimestamp(raw)
	if err != nil {
		fe.add("created_at", "%s", err.Error())
		return time.Time{}
	}
	if t.After(v.now.Add(MaxFutureSkew)) {
		fe.add("created_at", "is more than %s in the future", formatDuration(MaxFutureSkew))
		return time.Time{}
	}
	// A message that expires before it becomes visible would never be seen.
	if !v.now.Add(v.policy.VisibilityDelay).Before(t.Add(v.policy.Retention)) {
		fe.add("created_at", "is older than the retention period of %s", formatDuration(v.policy.Retention))
		return time.Time{}
	}
	return t
}

// formatDuration prints whole hours as such ("24h", "720h") and others as Go does.
func formatDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// isToken reports whether s is a non-empty RFC 9110 token (method or header name).
func isToken[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar[s[i]] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

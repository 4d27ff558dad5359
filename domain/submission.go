package domain

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// MaxNameLength is the longest application name, in characters after trimming.
const MaxNameLength = 200

// MaxPathLength is the longest path, in characters.
const MaxPathLength = 4096

// maxMethodLen is the longest method, from the contract.
const maxMethodLen = 32

// Submission is one validated, normalised exchange, before it gets an identity.
type Submission struct {
	Name      string
	IPAddress string
	Method    string
	Path      string
	// Route is the template the server matched, "" when not sent.
	Route      string
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

// MaxNesting bounds how deeply the arrays and objects of a POST body nest. A
// submission needs six ({"messages":[{"request":{"header":{"Accept":[...]);
// a decoder refuses hostile bodies such as "[[[[..." before decoding them.
const MaxNesting = 64

// ValidateSubmissions validates and normalises drafts at time now: either every item is
// valid or a *ValidationError lists each bad field by its JSON path ("[3].method"
// in a batch); more items than MaxBatch is an error wrapping ErrTooLarge.
// It builds the sets of masked headers and redacted fields on each call; a
// Validator builds them once.
func (p Policy) ValidateSubmissions(drafts Drafts, now time.Time) (Batch, error) {
	return p.Validator().ValidateSubmissions(drafts, now)
}

// Validator validates drafts as Policy.ValidateSubmissions does, with the policy's sets of
// masked headers and redacted fields built once, for a server that validates
// every POST under one policy. Get one from Policy.Validator: the zero
// Validator is the zero Policy's, which masks and redacts nothing.
type Validator struct {
	policy   Policy
	masked   map[string]bool
	redacted fieldSet
}

// Validator returns a Validator of p. It keeps the sets p has now: later
// changes to p's MaskedHeaders or RedactedFields do not reach it.
func (p Policy) Validator() Validator {
	return Validator{policy: p, masked: p.maskSet(), redacted: p.redactSet()}
}

// MaxBatch is the most items a batch may hold, which a decoder must keep.
func (vs Validator) MaxBatch() int { return vs.policy.MaxBatch }

// ValidateSubmissions is Policy.ValidateSubmissions under the validator's policy. It keeps nothing
// of drafts: what the messages hold is copied.
func (vs Validator) ValidateSubmissions(drafts Drafts, now time.Time) (Batch, error) {
	p := vs.policy
	if drafts.Count > p.MaxBatch || len(drafts.Items) < drafts.Count {
		return Batch{}, fmt.Errorf("batch of %d messages is over the limit of %d: %w", drafts.Count, p.MaxBatch, ErrTooLarge)
	}
	if drafts.Multiple && len(drafts.Items) == 0 {
		return Batch{}, invalid("the batch is empty: send at least one message")
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.giveBack()
	v := validator{now: Micro(now), policy: p, masked: vs.masked, redacted: vs.redacted, sniff: p.Sniff, scratch: sc}
	if v.sniff == nil {
		v.sniff = plainSniff
	}
	if !drafts.Multiple {
		fe := FieldErrors{}
		s := v.submission(&drafts.Items[0], false, &fe)
		if len(fe.List) > 0 {
			return Batch{}, &ValidationError{Message: "the submission is invalid", Fields: fe.List}
		}
		return Batch{Submissions: []Submission{s}}, nil
	}
	batch := Batch{Submissions: make([]Submission, len(drafts.Items)), Multiple: true}
	var all []FieldError
	for i := range drafts.Items {
		fe := FieldErrors{prefix: fmt.Sprintf("[%d].", i)}
		if item := &drafts.Items[i]; item.Kind != jsonbytes.Object {
			fe.List = append(fe.List, FieldError{Field: fmt.Sprintf("[%d]", i), Message: "must be a JSON object"})
		} else {
			batch.Submissions[i] = v.submission(item, drafts.Envelope, &fe)
		}
		all = append(all, fe.List...)
	}
	if len(all) == 0 {
		all = p.checkDays(batch.Submissions)
	}
	if len(all) > 0 {
		return Batch{}, &ValidationError{Message: "the batch is invalid: nothing was stored", Fields: all}
	}
	return batch, nil
}

// checkDays names the created_at of the first submission past the
// policy's MaxBatchDays distinct UTC days.
func (p Policy) checkDays(subs []Submission) []FieldError {
	if p.MaxBatchDays <= 0 || len(subs) <= p.MaxBatchDays {
		return nil
	}
	days := make(map[time.Time]struct{}, p.MaxBatchDays+1)
	for i, s := range subs {
		days[s.CreatedAt.UTC().Truncate(24*time.Hour)] = struct{}{}
		if len(days) > p.MaxBatchDays {
			return []FieldError{{Field: fmt.Sprintf("[%d].created_at", i),
				Message: fmt.Sprintf("is on a UTC day past the %d distinct days one batch may span: send the other days in batches of their own", p.MaxBatchDays)}}
		}
	}
	return nil
}

type validator struct {
	now      time.Time
	policy   Policy
	masked   map[string]bool
	redacted fieldSet
	sniff    Sniffer
	scratch  *scratch
}

// submission validates one item. envelope items may use "app" for "name" and a
// top-level "status_code" for "response.status_code".
func (v validator) submission(d *Draft, envelope bool, fe *FieldErrors) Submission {
	var s Submission
	nameField, name := "name", d.Name
	if envelope && d.Name.absent() && !d.App.absent() {
		nameField, name = "app", d.App
	}
	if text, ok := stringField(name, nameField, true, fe); ok {
		s.Name = strings.TrimSpace(string(text))
		if n := utf8.RuneCountInString(s.Name); n < 1 || n > MaxNameLength {
			fe.Add(nameField, "must be 1 to %d characters after trimming spaces", MaxNameLength)
		}
	}
	s.CreatedAt = v.createdAt(d.CreatedAt, fe)
	s.Method = method(d.Method, fe)
	if path, ok := stringField(d.Path, "path", true, fe); ok {
		switch {
		case !bytes.HasPrefix(path, []byte("/")):
			fe.Add("path", "must start with /")
		case utf8.RuneCount(path) > MaxPathLength:
			fe.Add("path", "must be at most %d characters", MaxPathLength)
		default:
			s.Path = string(path)
		}
	}
	if route, ok := stringField(d.Route, "route", false, fe); ok && !d.Route.absent() {
		if problem := routeProblem(string(route)); problem != "" {
			fe.Add("route", "%s", problem)
		} else {
			s.Route = string(route)
		}
	}
	if ip, ok := stringField(d.IPAddress, "ip_address", false, fe); ok && len(ip) > 0 {
		if s.IPAddress, ok = canonicalIP(string(ip)); !ok {
			fe.Add("ip_address", "%s", errIPAddress)
		}
	}
	var topStatus Value
	if envelope {
		topStatus = d.StatusCode
	}
	s.Duration, s.HasDuration = durationMS(d.DurationMS, fe)
	s.Request, _ = v.content(&d.Request, "request", false, topStatus, fe)
	s.Response, s.StatusCode = v.content(&d.Response, "response", true, topStatus, fe)
	return s
}

// scratch holds what validation writes before it makes the strings a message
// keeps; pooled, it is reused from one POST to the next. A buffer that grew
// past maxPooledScratch bytes is left to the collector.
type scratch struct {
	header []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

const maxPooledScratch = 1 << 20

func (s *scratch) giveBack() {
	if cap(s.header) <= maxPooledScratch {
		scratchPool.Put(s)
	}
}

// content validates the request or response. For the response it also returns
// status_code, which an envelope item may carry at its top level instead.
func (v validator) content(d *DraftContent, field string, isResponse bool, topStatus Value, fe *FieldErrors) (Content, int) {
	switch {
	case d.Kind == jsonbytes.Absent || d.Kind == jsonbytes.Null:
		if !isResponse || topStatus.absent() {
			fe.Add(field, "is required")
			return Content{}, 0
		}
	case d.Kind != jsonbytes.Object:
		fe.Add(field, "must be an object")
		return Content{}, 0
	}
	var c Content
	var body []byte
	switch {
	case d.Body.absent():
	case d.Body.Kind != jsonbytes.String:
		fe.Add(field+".body", "must be a string")
	default:
		body = d.Body.Text
	}
	c.Header = v.header(d.Header, field+".header", fe)
	c.Size = len(body)
	var isJSON bool
	if c.ContentType, c.Body, isJSON = typeAndRedact(c.Header, body, v.sniff, v.redacted); isJSON {
		c.JSONBody = c.Body
	}
	if v.masked["Content-Type"] { // the header kept every other masked value as Mask
		maskHeader(c.Header, v.masked)
	}

	status := 0
	if isResponse {
		statusValue, statusField := d.StatusCode, field+".status_code"
		if statusValue.absent() && !topStatus.absent() {
			statusValue, statusField = topStatus, "status_code"
		}
		status = statusCode(statusValue, statusField, fe)
	}
	return c, status
}

// method reads the required method, upper-cased. The standard methods come
// without allocating: nearly every submission has one.
func method(v Value, fe *FieldErrors) string {
	switch {
	case v.absent():
		fe.Add("method", "is required")
		return ""
	case v.Kind != jsonbytes.String:
		fe.Add("method", "must be a string")
		return ""
	}
	name := v.Text
	switch {
	case !IsToken(name):
		fe.Add("method", "must be an HTTP method token such as GET or POST")
		return ""
	case len(name) > maxMethodLen:
		fe.Add("method", "must be at most %d characters", maxMethodLen)
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
func durationMS(v Value, fe *FieldErrors) (time.Duration, bool) {
	if v.absent() {
		return 0, false
	}
	d, ok := parseDurationMS(string(v.Text), v.Kind == jsonbytes.Number)
	if !ok {
		fe.Add("duration_ms", errDurationMS)
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

func statusCode(v Value, field string, fe *FieldErrors) int {
	if v.absent() {
		fe.Add(field, "is required")
		return 0
	}
	code, ok := integer(v)
	if !ok {
		fe.Add(field, "must be an integer")
		return 0
	}
	if code < 100 || code > 599 {
		fe.Add(field, "must be between 100 and 599")
		return 0
	}
	return int(code)
}

// stringField reads the text of a string member, reporting problems under
// path. An absent or null optional member is empty.
func stringField(v Value, path string, required bool, fe *FieldErrors) ([]byte, bool) {
	if v.absent() {
		if required {
			fe.Add(path, "is required")
		}
		return nil, !required
	}
	if v.Kind != jsonbytes.String {
		fe.Add(path, "must be a string")
		return nil, false
	}
	return v.Text, true
}

func (v validator) createdAt(value Value, fe *FieldErrors) time.Time {
	if value.absent() {
		fe.Add("created_at", "is required")
		return time.Time{}
	}
	t, err := parseTimestamp(value)
	if err != nil {
		fe.Add("created_at", "%s", err.Error())
		return time.Time{}
	}
	if t.After(v.now.Add(MaxFutureSkew)) {
		fe.Add("created_at", "is more than %s in the future", formatDuration(MaxFutureSkew))
		return time.Time{}
	}
	// A message that expires before it becomes visible would never be seen.
	if !v.now.Add(v.policy.VisibilityDelay).Before(t.Add(v.policy.Retention)) {
		fe.Add("created_at", "is older than the retention period of %s", formatDuration(v.policy.Retention))
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

// IsToken reports whether s is a non-empty RFC 9110 token (method or header name).
func IsToken[T string | []byte](s T) bool {
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

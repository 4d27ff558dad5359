package domain

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxPathPrefixBytes bounds the path_prefix filter, in bytes of UTF-8: a store
// may match a prefix with an automaton of one state per byte, and Elasticsearch
// (Lucene) refuses one of more than 1,000.
const MaxPathPrefixBytes = 999

// Page size bounds of the fetch operation.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Filter selects messages; zero fields match everything. It is the single
// definition of what each filter means: the memory store and the conformance
// suite both use Matches.
type Filter struct {
	Name       string
	Method     string
	IPAddress  string
	Path       string
	PathPrefix string
	// Route matches the route template exactly.
	Route string
	// StatusMin and StatusMax bound status_code inclusively (0: unbounded).
	StatusMin, StatusMax int
	// From and To bound created_at as [From, To) (zero: unbounded).
	From, To time.Time
	// Text is q: see Search for what it matches.
	Text string
	// MinDuration and MaxDuration bound the duration inclusively when set; a
	// message without a duration then never matches.
	MinDuration, MaxDuration *time.Duration
	// Hidden, when set, leaves out every message its store's subject index
	// holds under one of its hashes: the subjects of an account's pending
	// erasures, which every read leaves out until the erasure has hidden
	// their messages (docs/erasure.md). Stores apply it by their subject
	// index (Matches cannot: a read message carries no subjects); tallies
	// are not left out. No rollup answers a filter with it.
	Hidden *HiddenSubjects
}

// HiddenSubjects are the subject hashes a read leaves out (Filter.Hidden).
type HiddenSubjects struct {
	// Hashes are sorted, each once, at least one.
	Hashes []string
}

// HiddenSubjectsOf are the hashes of each list, sorted and each once; nil
// when there are none.
func HiddenSubjectsOf(lists ...[]string) *HiddenSubjects {
	hashes := slices.Compact(slices.Sorted(slices.Values(slices.Concat(lists...))))
	if len(hashes) == 0 {
		return nil
	}
	return &HiddenSubjects{Hashes: hashes}
}

// Hides reports whether a message indexed under hashes is left out.
func (h *HiddenSubjects) Hides(hashes []string) bool {
	if h == nil {
		return false
	}
	for _, x := range hashes {
		if _, found := slices.BinarySearch(h.Hashes, x); found {
			return true
		}
	}
	return false
}

// MatcherHiding is Matcher also leaving out what f.Hidden hides: a
// message whose subject hashes, as subjectsOf reads them from the store's
// subject index, hold a hidden one. A tally is never hidden.
func (f Filter) MatcherHiding(subjectsOf func(Message) []string) func(Message) bool {
	matches, hidden := f.Matcher(), f.Hidden
	if hidden == nil {
		return matches
	}
	return func(m Message) bool { return matches(m) && (m.Tally || !hidden.Hides(subjectsOf(m))) }
}

// Matches reports whether m passes every filter. It compiles f's search on
// each call: Matcher compiles it once for many messages.
func (f Filter) Matches(m Message) bool { return f.Matcher()(m) }

// Matcher returns Matches with f's search compiled once.
func (f Filter) Matcher() func(Message) bool {
	search := NewSearch(f.Text)
	return func(m Message) bool { return f.matchesFields(m) && search.Matches(m) }
}

// HasDurationBounds reports whether f bounds the duration.
func (f Filter) HasDurationBounds() bool { return f.MinDuration != nil || f.MaxDuration != nil }

// matchesFields is Matches without the search.
func (f Filter) matchesFields(m Message) bool {
	if f.HasDurationBounds() && (!m.HasDuration ||
		(f.MinDuration != nil && m.Duration < *f.MinDuration) || (f.MaxDuration != nil && m.Duration > *f.MaxDuration)) {
		return false
	}
	return (f.Name == "" || m.Name == f.Name) &&
		(f.Method == "" || m.Method == f.Method) &&
		(f.IPAddress == "" || m.IPAddress == f.IPAddress) &&
		(f.Path == "" || m.Path == f.Path) &&
		(f.PathPrefix == "" || strings.HasPrefix(m.Path, f.PathPrefix)) &&
		(f.Route == "" || m.Route == f.Route) &&
		(f.StatusMin == 0 || m.StatusCode >= f.StatusMin) &&
		(f.StatusMax == 0 || m.StatusCode <= f.StatusMax) &&
		(f.From.IsZero() || !m.CreatedAt.Before(f.From)) &&
		(f.To.IsZero() || m.CreatedAt.Before(f.To))
}

// Query asks a store for one page of a scope's messages, newest first.
type Query struct {
	Scope  Scope
	Filter Filter
	Limit  int
	// After, when set, starts the page after this position (keyset pagination).
	After *Cursor
}

// Page is one page of a listing.
type Page struct {
	Messages []Message
	// HasMore reports that at least one more message follows the last one.
	HasMore bool
}

// Next is the cursor for the following page, or nil on the last page.
func (p Page) Next() *Cursor {
	if !p.HasMore || len(p.Messages) == 0 {
		return nil
	}
	last := p.Messages[len(p.Messages)-1]
	return &Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
}

// Cursor is a position in the newest-first order: (created_at, id) of the last
// message of a page.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// Precedes reports whether a sorts before b in the newest-first order: later
// created_at first, ties broken by id descending.
func Precedes(a, b Message) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// Admits reports whether m lies strictly after the cursor position.
func (c Cursor) Admits(m Message) bool {
	if !m.CreatedAt.Equal(c.CreatedAt) {
		return m.CreatedAt.Before(c.CreatedAt)
	}
	return m.ID < c.ID
}

const cursorVersion = "1"

// Encode renders the cursor opaquely for clients.
func (c Cursor) Encode() string {
	raw := cursorVersion + ":" + strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + ":" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor parses a cursor made by Encode.
func DecodeCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, fmt.Errorf("is not a cursor returned by this service")
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != cursorVersion {
		return Cursor{}, fmt.Errorf("is not a cursor returned by this service")
	}
	micros, err := strconv.ParseInt(parts[1], 10, 64)
	id, ok := CanonicalID(parts[2])
	if err != nil || !ok || micros <= 0 {
		return Cursor{}, fmt.Errorf("is not a cursor returned by this service")
	}
	return Cursor{CreatedAt: time.UnixMicro(micros).UTC(), ID: id}, nil
}

// ParseQuery reads the fetch operation's query parameters (a url.Values). Every invalid value is
// reported by parameter name; unknown parameters are ignored.
func ParseQuery(values map[string][]string) (Query, error) {
	q := Query{Limit: DefaultLimit}
	p := NewQueryParams(values)
	if v, ok := p.Get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			p.fe.Add("limit", "must be an integer from 1 to %d", MaxLimit)
		} else {
			q.Limit = n
		}
	}
	q.After = p.cursor()
	q.Filter = p.Filter()
	if err := p.Err(); err != nil {
		return Query{}, err
	}
	return q, nil
}

// QueryParams reads query parameters, collecting every problem by parameter name.
type QueryParams struct {
	values map[string][]string
	fe     FieldErrors
}

// NewQueryParams reads values, the query parameters of a request.
func NewQueryParams(values map[string][]string) *QueryParams {
	return &QueryParams{values: values}
}

// Invalid records what is wrong with the parameter name.
func (p *QueryParams) Invalid(name, format string, args ...any) {
	p.fe.Add(name, format, args...)
}

// Get returns the one non-empty, valid UTF-8 value of name, if given.
func (p *QueryParams) Get(name string) (string, bool) {
	vs, ok := p.values[name]
	switch {
	case !ok:
		return "", false
	case len(vs) > 1:
		p.fe.Add(name, "must be given at most once")
		return "", false
	case strings.TrimSpace(vs[0]) == "":
		p.fe.Add(name, "must not be empty")
		return "", false
	case !utf8.ValidString(vs[0]):
		// Stored text is valid UTF-8, so such a value matches nothing; and a
		// store's query language would turn it into U+FFFD or refuse it.
		p.fe.Add(name, "must be valid UTF-8 (percent-decoded)")
		return "", false
	}
	return vs[0], true
}

// Err is every problem found, as a ValidationError, or nil.
func (p *QueryParams) Err() error {
	if len(p.fe.List) > 0 {
		return &ValidationError{Message: "the query parameters are invalid", Fields: p.fe.List}
	}
	return nil
}

func (p *QueryParams) cursor() *Cursor {
	v, ok := p.Get("cursor")
	if !ok {
		return nil
	}
	c, err := DecodeCursor(v)
	if err != nil {
		p.fe.Add("cursor", "%s", err.Error())
		return nil
	}
	return &c
}

// Filter reads the filter parameters that fetch, statistics and export share.
func (p *QueryParams) Filter() Filter {
	var f Filter
	if v, ok := p.Get("name"); ok {
		f.Name = strings.TrimSpace(v)
	}
	if v, ok := p.Get("method"); ok {
		if !IsToken(v) {
			p.fe.Add("method", "must be an HTTP method token such as GET")
		}
		f.Method = strings.ToUpper(v)
	}
	if v, ok := p.Get("ip_address"); ok {
		if f.IPAddress, ok = canonicalIP(v); !ok {
			p.fe.Add("ip_address", "%s", errIPAddress)
		}
	}
	if v, ok := p.Get("status_code"); ok {
		f.StatusMin, f.StatusMax, ok = parseStatusFilter(v)
		if !ok {
			p.fe.Add("status_code", "must be a status code from 100 to 599 (404) or a class (4xx)")
		}
	}
	for _, name := range []string{"path", "path_prefix"} {
		if v, ok := p.Get(name); ok {
			if !strings.HasPrefix(v, "/") {
				p.fe.Add(name, "must start with /")
			} else if name == "path_prefix" && len(v) > MaxPathPrefixBytes {
				p.fe.Add(name, "must be at most %d bytes", MaxPathPrefixBytes)
			} else if name == "path" {
				f.Path = v
			} else {
				f.PathPrefix = v
			}
		}
	}
	if v, ok := p.Get("route"); ok {
		if problem := routeProblem(v); problem != "" {
			p.fe.Add("route", "%s", problem)
		} else {
			f.Route = v
		}
	}
	for _, bound := range []struct {
		name string
		t    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v, ok := p.Get(bound.name); ok {
			var err error
			if *bound.t, err = ParseUnixOrRFC3339(v); err != nil {
				p.fe.Add(bound.name, "%s", err.Error())
			}
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		p.fe.Add("to", "must be after from")
	}
	if v, ok := p.Get("q"); ok {
		if problem := checkSearch(v); problem != "" {
			p.fe.Add("q", "%s", problem)
		} else {
			f.Text = v
		}
	}
	// Stored durations are whole microseconds: a lower bound between two of
	// them rounds up and an upper one down, so both stay exact. Whether min
	// exceeds max is decided on the decimals as given.
	var minOK, maxOK bool
	f.MinDuration, minOK = p.duration("min_duration_ms", roundUp)
	f.MaxDuration, maxOK = p.duration("max_duration_ms", truncate)
	if minOK && maxOK && exceeds(p.values["min_duration_ms"][0], p.values["max_duration_ms"][0]) {
		p.fe.Add("max_duration_ms", "must not be less than min_duration_ms")
	}
	return f
}

// duration reads a duration bound in milliseconds, rounded to a microsecond
// as round says; ok reports a valid bound.
func (p *QueryParams) duration(name string, round rounding) (bound *time.Duration, ok bool) {
	v, given := p.Get(name)
	if !given {
		return nil, false
	}
	d, valid := parseMillis(v, round)
	if !valid {
		p.fe.Add(name, errDurationMS)
		return nil, false
	}
	return &d, true
}

// exceeds reports whether decimal a is greater than decimal b, exactly; both
// were accepted by parseMillis.
func exceeds(a, b string) bool {
	x, okX := new(big.Rat).SetString(a)
	y, okY := new(big.Rat).SetString(b)
	return okX && okY && x.Cmp(y) > 0
}

// parseStatusFilter reads "404" or a class such as "4xx" as an inclusive range.
func parseStatusFilter(v string) (lo, hi int, ok bool) {
	if len(v) == 3 && (v[1] == 'x' || v[1] == 'X') && (v[2] == 'x' || v[2] == 'X') && v[0] >= '1' && v[0] <= '5' {
		class := int(v[0]-'0') * 100
		return class, class + 99, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 599 || len(v) != 3 {
		return 0, 0, false
	}
	return n, n, true
}

var errIPAddress = errors.New("must be a valid IPv4 or IPv6 address")

// maxZoneLength bounds an IPv6 zone (such as "eth0" in fe80::1%eth0): interface
// names are short, and the zone is stored and indexed verbatim.
const maxZoneLength = 64

// canonicalIP returns the canonical form of an IPv4 or IPv6 address, for the
// ip_address field and filter alike. netip accepts a zone of any length and bytes;
// here it must be 1-64 characters of RFC 6874's unreserved set [A-Za-z0-9._~-].
func canonicalIP(s string) (string, bool) {
	addr, err := netip.ParseAddr(s)
	if err != nil || !validZone(addr.Zone()) {
		return "", false
	}
	return addr.String(), true
}

// validZone accepts "" (no zone; netip refuses an empty one after "%").
func validZone(zone string) bool {
	if len(zone) > maxZoneLength {
		return false
	}
	for i := 0; i < len(zone); i++ {
		c := zone[i]
		if !isDigit(c) && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !strings.ContainsRune("._~-", rune(c)) {
			return false
		}
	}
	return true
}

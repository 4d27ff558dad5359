package domain

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseQuery(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	cursor := Cursor{CreatedAt: at.Add(123 * time.Microsecond), ID: "0190f5a2-3b4c-7d8e-9f00-112233445566"}
	values, _ := url.ParseQuery("limit=5&name=shop&method=post&ip_address=2001:DB8::1&status_code=4xx&path=/a&path_prefix=/b&from=1795262400&to=2026-11-21T14:00:00%2B01:00&cursor=" + cursor.Encode())
	q, err := ParseQuery(values)
	if err != nil {
		t.Fatal(err)
	}
	want := Filter{Name: "shop", Method: "POST", IPAddress: "2001:db8::1", Path: "/a", PathPrefix: "/b",
		StatusMin: 400, StatusMax: 499, From: at, To: at.Add(time.Hour)}
	if q.Filter != want || q.Limit != 5 || q.After == nil || *q.After != cursor {
		t.Errorf("ParseQuery = %+v / %+v, want %+v / %+v", q.Filter, q.After, want, cursor)
	}
	q, err = ParseQuery(url.Values{"status_code": {"404"}})
	if err != nil || q.Filter.StatusMin != 404 || q.Filter.StatusMax != 404 || q.Limit != DefaultLimit {
		t.Errorf("status 404: %+v %v", q, err)
	}
}

func TestParseQueryErrors(t *testing.T) {
	cases := map[string]string{
		"limit=0": "limit", "limit=101": "limit", "limit=abc": "limit", "limit=1&limit=2": "limit",
		"cursor=garbage": "cursor", "cursor=": "cursor", "cursor=MTp4Onk": "cursor",
		"status_code=45x": "status_code", "status_code=600": "status_code", "status_code=6xx": "status_code", "status_code=0404": "status_code",
		"method=G%20T": "method", "ip_address=nope": "ip_address", "path=a": "path", "path_prefix=b": "path_prefix",
		"path_prefix=/%C3": "path_prefix", "path_prefix=/" + strings.Repeat("a", MaxPathPrefixBytes): "path_prefix", "path=/u%FF8": "path", "name=a%FFb": "name", "cursor=%FF": "cursor",
		"from=yesterday": "from", "to=-5": "to", "from=1795262400&to=1795262400": "to", "name=": "name",
		// A bound is never the zero time, nor milliseconds read as seconds.
		"to=0001-01-01T00:00:00Z": "to", "from=0": "from", "to=1970-01-01T00:00:00Z": "to",
		"from=1700000000000": "from", "to=9999999999999": "to",
		"ip_address=fe80::1%25" + strings.Repeat("a", 40000): "ip_address",
		"ip_address=::1%25%0A%00":                            "ip_address", "ip_address=::ffff:10.0.0.1%25%3Cimg%20src=x%3E": "ip_address",
	}
	for raw, field := range cases {
		values, _ := url.ParseQuery(raw)
		_, err := ParseQuery(values)
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != field {
			t.Errorf("ParseQuery(%q) = %v, want one error on %s", raw, err, field)
		}
	}
}

// TestParseTimeBound pins how from and to read: RFC 3339 (t and z in either case) or
// Unix seconds, rounded up to a whole microsecond.
func TestParseTimeBound(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 41, 25, 0, time.UTC) // Unix 1795318885
	oneMicroAfterEpoch := time.UnixMicro(1).UTC()
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	cases := []struct {
		raw  string
		want time.Time
	}{
		{"2026-11-22T03:41:25Z", at},
		{"2026-11-22T03:41:25z", at},
		{"2026-11-22t03:41:25z", at},
		{"2026-11-22t04:41:25.5+01:00", at.Add(500 * time.Millisecond)},
		{"2026-11-22T03:41:25.000003Z", at.Add(3 * time.Microsecond)},
		{"2026-11-22T03:41:25.0000030000Z", at.Add(3 * time.Microsecond)},
		{"2026-11-22T03:41:25.0000031Z", at.Add(4 * time.Microsecond)},
		{"2026-11-22T03:41:25.0000030000000001Z", at.Add(4 * time.Microsecond)}, // beyond nanoseconds
		{"1795318885", at},
		{"1795318885.000003", at.Add(3 * time.Microsecond)},
		{"1795318885.0000031", at.Add(4 * time.Microsecond)},
		{"1.7953188850000031e9", at.Add(4 * time.Microsecond)},
		{"17953188850000031E-7", at.Add(4 * time.Microsecond)},
		{"1.7e9", time.Unix(1.7e9, 0).UTC()},
		{"0.0000001", oneMicroAfterEpoch},
		{"1e-300", oneMicroAfterEpoch},
		{"1970-01-01T00:00:00.0000001Z", oneMicroAfterEpoch},
		{"100000000000", time.Unix(1e11, 0).UTC()}, // seconds per the contract, though created_at would read ms
		{"253402300799.999999", last},
		{"9999-12-31T23:59:59.999999Z", last},
		{"9999-12-31T23:59:59.9999990Z", last},
	}
	for _, c := range cases {
		got, err := ParseUnixOrRFC3339(c.raw)
		if err != nil || !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("ParseUnixOrRFC3339(%q) = %v, %v, want %v UTC", c.raw, got, err, c.want)
		}
	}
}

func TestParseTimeBoundErrors(t *testing.T) {
	cases := []struct {
		raw        string
		want, hint error // hint: the unit the number looks like, if any
	}{
		{"yesterday", errTimeBoundSyntax, nil},
		{"-5", errTimeBoundSyntax, nil},
		{"+5", errTimeBoundSyntax, nil},
		{".5", errTimeBoundSyntax, nil},
		{"5.", errTimeBoundSyntax, nil},
		{"1e", errTimeBoundSyntax, nil},
		{"0x1e5p1", errTimeBoundSyntax, nil},
		{"Inf", errTimeBoundSyntax, nil},
		{"2026-11-22T03:41:25Zz", errTimeBoundSyntax, nil},
		{"0", errNotAfterEpoch, nil},
		{"0.000", errNotAfterEpoch, nil},
		{"0e9", errNotAfterEpoch, nil},
		{"1970-01-01T00:00:00Z", errNotAfterEpoch, nil},
		{"1969-12-31T23:59:59.9999999Z", errNotAfterEpoch, nil},
		{"0001-01-01T00:00:00Z", errNotAfterEpoch, nil},
		{"0000-01-01T00:00:00Z", errNotAfterEpoch, nil},
		{"1700000000000", errAfterYear9999, errLooksLikeMillis},
		{"9999999999999", errAfterYear9999, errLooksLikeMillis},
		{"1700000000000000", errAfterYear9999, errLooksLikeMicros},
		{"1.7e12", errAfterYear9999, errLooksLikeMillis},
		{"253402300800", errAfterYear9999, errLooksLikeMillis},
		{"253402300799.9999991", errAfterYear9999, errLooksLikeMillis},
		{"1e300", errAfterYear9999, nil},
		{"99999999999999999999", errAfterYear9999, nil},
		{"9999-12-31T23:59:59.9999991Z", errAfterYear9999, nil},
		{"9999-12-31T23:59:59-01:00", errAfterYear9999, nil},
	}
	hints := []error{errLooksLikeMillis, errLooksLikeMicros}
	for _, c := range cases {
		got, err := ParseUnixOrRFC3339(c.raw)
		if !errors.Is(err, c.want) || !got.IsZero() {
			t.Errorf("ParseUnixOrRFC3339(%q) = %v, %v, want %v", c.raw, got, err, c.want)
		}
		for _, hint := range hints {
			if errors.Is(err, hint) != (hint == c.hint) {
				t.Errorf("ParseUnixOrRFC3339(%q) = %v, want hint %v", c.raw, err, c.hint)
			}
		}
	}
}

// TestTimeBoundsAtMicrosecondPrecision: stored times are whole microseconds, so a
// bound with finer digits must select exactly the stored times inside [from, to).
func TestTimeBoundsAtMicrosecondPrecision(t *testing.T) {
	stored := Message{CreatedAt: time.Date(2026, 11, 22, 3, 41, 55, 3000, time.UTC)} // Unix 1795318915.000003
	cases := []struct {
		query   string
		matches bool
	}{
		{"to=2026-11-22T03:41:55.0000031Z", true},
		{"to=2026-11-22T03:41:55.000003Z", false},
		{"to=1795318915.0000031", true},
		{"from=2026-11-22T03:41:55.0000029Z", true},
		{"from=2026-11-22T03:41:55.0000031Z", false},
		{"from=1795318915.0000031", false},
		{"from=2026-11-22T03:41:55.0000029Z&to=2026-11-22T03:41:55.0000031Z", true},
	}
	for _, c := range cases {
		values, _ := url.ParseQuery(c.query)
		q, err := ParseQuery(values)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.query, err)
			continue
		}
		if got := q.Filter.Matches(stored); got != c.matches {
			t.Errorf("%s matches %s = %v, want %v", c.query, FormatTime(stored.CreatedAt), got, c.matches)
		}
	}
}

// TestIPAddressZones: the submission field and the query filter share one rule; a
// zone is 1-64 characters from RFC 6874's unreserved set.
func TestIPAddressZones(t *testing.T) {
	cases := []struct{ raw, want string }{ // want "": refused
		{"2001:DB8::1", "2001:db8::1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"FE80::1%Eth-0.~_", "fe80::1%Eth-0.~_"},
		{"fe80::1%" + strings.Repeat("z", 64), "fe80::1%" + strings.Repeat("z", 64)},
		{"fe80::1%" + strings.Repeat("z", 65), ""},
		{"fe80::1%" + strings.Repeat("a", 40000), ""},
		{"::1%\n\u0000", ""},
		{"::ffff:10.0.0.1%<img src=x>", ""},
		{"fe80::1%eth/0", ""},
		{"fe80::1%\u00e9", ""},
		{"fe80::1%", ""},
		{"1.2.3.4%eth0", ""},
	}
	for _, c := range cases {
		raw, _ := json.Marshal(c.raw)
		b, err := parse(t, validItem("ip_address", string(raw)))
		if c.want == "" {
			assertFields(t, err, "ip_address")
		} else if err != nil || b.Submissions[0].IPAddress != c.want {
			t.Errorf("submission ip_address %.40q: %+v, %v, want %q", c.raw, b.Submissions, err, c.want)
		}
		q, err := ParseQuery(url.Values{"ip_address": {c.raw}})
		var verr *ValidationError
		if c.want == "" && (!errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != "ip_address") {
			t.Errorf("filter ip_address %.40q: err = %v, want one error on ip_address", c.raw, err)
		}
		if c.want != "" && (err != nil || q.Filter.IPAddress != c.want) {
			t.Errorf("filter ip_address %.40q = %q, %v, want %q", c.raw, q.Filter.IPAddress, err, c.want)
		}
	}
}

func TestOrderAndCursor(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newer := Message{CreatedAt: at.Add(time.Microsecond), ID: "0000"}
	tieHigh := Message{CreatedAt: at, ID: "bbbb"}
	tieLow := Message{CreatedAt: at, ID: "aaaa"}
	if !Precedes(newer, tieHigh) || !Precedes(tieHigh, tieLow) || Precedes(tieLow, tieHigh) || Precedes(tieHigh, tieHigh) {
		t.Error("Precedes does not order newest first with id descending on ties")
	}
	c := Cursor{CreatedAt: tieHigh.CreatedAt, ID: tieHigh.ID}
	if c.Admits(newer) || c.Admits(tieHigh) || !c.Admits(tieLow) {
		t.Error("cursor must admit exactly the messages after its position")
	}
	page := Page{Messages: []Message{newer, tieHigh}, HasMore: true}
	if next := page.Next(); next == nil || *next != c {
		t.Errorf("Page.Next = %v, want %v", next, c)
	}
	if (Page{Messages: []Message{newer}}).Next() != nil {
		t.Error("the last page must have no next cursor")
	}
}

func TestFilterMatches(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Message{Name: "shop", Method: "GET", IPAddress: "10.0.0.1", Path: "/a.b/c", StatusCode: 404, CreatedAt: at}
	matching := []Filter{{}, {Name: "shop"}, {PathPrefix: "/a.b"}, {StatusMin: 400, StatusMax: 499}, {From: at, To: at.Add(time.Microsecond)}}
	for _, f := range matching {
		if !f.Matches(m) {
			t.Errorf("%+v should match", f)
		}
	}
	failing := []Filter{{Name: "Shop"}, {Method: "POST"}, {PathPrefix: "/aXb"}, {Path: "/a.b"}, {StatusMin: 500, StatusMax: 599}, {To: at}, {From: at.Add(time.Microsecond)}}
	for _, f := range failing {
		if f.Matches(m) {
			t.Errorf("%+v should not match", f)
		}
	}
}

func TestReadableWindow(t *testing.T) {
	p := DefaultPolicy()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := p.NewMessage(Scope{"acme", DomainLive}, Submission{CreatedAt: at}, Identity{}, at)
	checks := map[time.Duration]bool{
		p.VisibilityDelay - time.Microsecond: false,
		p.VisibilityDelay:                    true,
		p.Retention - time.Microsecond:       true,
		p.Retention:                          false,
	}
	for offset, want := range checks {
		if got := m.Readable(at.Add(offset)); got != want {
			t.Errorf("Readable at +%s = %v, want %v", offset, got, want)
		}
	}
	if got := p.OldestReadable(at.Add(p.Retention)); !got.Equal(at.Add(time.Microsecond)) {
		t.Errorf("OldestReadable = %v", got)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	broken := []func(*Policy){
		func(p *Policy) { p.VisibilityDelay = -1 },
		func(p *Policy) { p.Retention = 0 },
		func(p *Policy) { p.VisibilityDelay = p.Retention },
		func(p *Policy) { p.MaxBatch = 0 },
		func(p *Policy) { p.MaxBatchDays = -1 },
		func(p *Policy) { p.MaskedHeaders = []string{"bad name"} },
	}
	for i, breakIt := range broken {
		p := DefaultPolicy()
		breakIt(&p)
		if p.Validate() == nil {
			t.Errorf("broken policy %d accepted", i)
		}
	}
}

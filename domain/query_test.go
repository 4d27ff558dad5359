package domain

import (
	"errors"
	"net/url"
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
		"from=yesterday": "from", "to=-5": "to", "from=1795262400&to=1795262400": "to", "name=": "name",
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

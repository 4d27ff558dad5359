package esindex

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

func TestIndexNames(t *testing.T) {
	names := NewNames("reqlog")
	if got, want := names.ReadPattern(), "reqlog-messages-*"; got != want {
		t.Errorf("ReadPattern() = %q, want %q", got, want)
	}
	if got, want := names.Template(), "reqlog-messages"; got != want {
		t.Errorf("Template() = %q, want %q", got, want)
	}
	tokyo := time.FixedZone("UTC+9", 9*60*60)
	newYork := time.FixedZone("UTC-5", -5*60*60)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), "reqlog-messages-2026.11.21"},
		{time.Date(2026, 11, 21, 23, 59, 59, 999999000, time.UTC), "reqlog-messages-2026.11.21"},
		{time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), "reqlog-messages-2026.11.22"},
		{time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC), "reqlog-messages-2026.12.31"},
		{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "reqlog-messages-2027.01.01"},
		{time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), "reqlog-messages-2028.02.29"},
		// The UTC day counts, not the day of the time's location.
		{time.Date(2026, 11, 22, 8, 59, 59, 0, tokyo), "reqlog-messages-2026.11.21"},
		{time.Date(2026, 11, 22, 9, 0, 0, 0, tokyo), "reqlog-messages-2026.11.22"},
		{time.Date(2026, 11, 21, 19, 0, 0, 0, newYork), "reqlog-messages-2026.11.22"},
	} {
		if got := names.For(tc.at); got != tc.want {
			t.Errorf("For(%s) = %q, want %q", tc.at.Format(time.RFC3339Nano), got, tc.want)
		}
	}
	if got, want := NewNames("acme-prod").For(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), "acme-prod-messages-2026.01.02"; got != want {
		t.Errorf("For with prefix acme-prod = %q, want %q", got, want)
	}
}

// Days gives For's name for every time, and says it changed exactly when
// the UTC day did, whatever zone the times are in.
func TestDayIndicesFollowForDayByDay(t *testing.T) {
	names := NewNames("reqlog")
	tokyo := time.FixedZone("UTC+9", 9*60*60)
	base := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	times := []time.Time{
		base, base.Add(time.Hour), base.In(tokyo), // the same UTC day, the last in Tokyo's next
		base.Add(3 * time.Hour), base.Add(3 * time.Hour).In(tokyo), // the next UTC day
		base, base.AddDate(0, 1, 0), base.AddDate(1, 0, 0), // back, a month on, a year on
	}
	days := Days{Names: names}
	previous := ""
	for i, at := range times {
		name, changed := days.Of(domain.Message{CreatedAt: at})
		if want := names.For(at); name != want {
			t.Errorf("time %d (%v): %q, want %q", i, at, name, want)
		}
		if want := name != previous; changed != want {
			t.Errorf("time %d (%v): changed %v, want %v", i, at, changed, want)
		}
		previous = name
	}
}

// Elasticsearch takes the refresh interval in whole milliseconds.
func TestRefreshSetting(t *testing.T) {
	for interval, want := range map[time.Duration]string{
		time.Second: "1000ms", 250 * time.Millisecond: "250ms", 2 * time.Millisecond: "2ms", time.Millisecond: "1ms",
	} {
		if got := (Config{RefreshInterval: interval}).refreshSetting(); got != want {
			t.Errorf("refresh setting of %s = %q, want %q", interval, got, want)
		}
	}
}

// A retention rule's messages go to their class's index of the day, named
// by the class's tag as SQLite's day files are; the policy's keep the
// day's name; DayOf reads the day of either and nothing else.
func TestClassIndexNames(t *testing.T) {
	names := NewNames("reqlog")
	at := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	class := domain.RetentionClass{Account: "acme", Rule: "payments"}
	classed := names.ForClass(at, class)
	if want := "reqlog-messages-2026.11.29-" + class.Tag(); classed != want || len(class.Tag()) != 17 {
		t.Errorf("ForClass = %q, want %q (a tag of r and 16 hex digits)", classed, want)
	}
	if got := names.Of(domain.Message{Account: "acme", RetentionRule: "payments", CreatedAt: at}); got != classed {
		t.Errorf("Of a message of the class = %q, want %q", got, classed)
	}
	if got := names.Of(domain.Message{Account: "acme", CreatedAt: at}); got != names.For(at) {
		t.Errorf("Of a message of the policy = %q, want %q", got, names.For(at))
	}
	if other := names.ForClass(at, domain.RetentionClass{Account: "other", Rule: "payments"}); other == classed {
		t.Errorf("another account's rule of the same id shares the index %q", other)
	}
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, index := range []string{classed, names.For(at), "reqlog-rollups-2026.11.29"} {
		if got, ok := names.DayOf(index); !ok || !got.Equal(day) {
			t.Errorf("DayOf(%q) = %v, %v, want %v", index, got, ok, day)
		}
	}
	for _, index := range []string{"reqlog-messages-2026.11.29-x", "reqlog-messages-2026.11.29-r0123", "reqlog-rollups-2026.11.29-" + class.Tag(), "reqlog-rollup-state"} {
		if got, ok := names.DayOf(index); ok {
			t.Errorf("DayOf(%q) = %v, want none", index, got)
		}
	}
	days := Days{Names: names}
	for i, m := range []domain.Message{
		{Account: "acme", CreatedAt: at}, {Account: "acme", RetentionRule: "payments", CreatedAt: at},
		{Account: "acme", RetentionRule: "payments", CreatedAt: at.Add(-time.Hour)}, {Account: "acme", CreatedAt: at},
	} {
		name, changed := days.Of(m)
		if want := names.Of(m); name != want || changed != (i != 2) {
			t.Errorf("message %d: Days.Of = %q, %v, want %q, %v", i, name, changed, want, i != 2)
		}
	}
}

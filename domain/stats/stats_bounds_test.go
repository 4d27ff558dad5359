package stats

import (
	"testing"
	"time"
)

// Buckets are counted right however far from 1970 the range lies, and with a
// to that is not on a whole second.
func TestBucketCountFarFromTheEpoch(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		from, to time.Time
		width    time.Duration
		want     int
	}{
		{time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Hour, 24},
		{time.Date(2500, 1, 1, 0, 30, 0, 0, time.UTC), time.Date(2500, 1, 2, 0, 0, 0, 0, time.UTC), time.Hour, 24},
		{time.Date(2262, 4, 10, 0, 0, 0, 0, time.UTC), time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC), day, 2},
		{time.Unix(1, 0), time.Unix(86400, 0), day, 1},
		{time.Unix(60, 0), time.Unix(120, 1), time.Minute, 2},
		{time.Unix(60, 0), time.Unix(120, 0), time.Minute, 1},
		{time.Unix(61, 5), time.Unix(119, 999), time.Minute, 1},
		{time.Unix(0, 0), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), day, 2932896},
	} {
		if got := bucketCount(c.from, c.to, c.width); got != c.want {
			t.Errorf("bucketCount(%v, %v, %v) = %d, want %d", c.from, c.to, c.width, got, c.want)
		}
	}
	q := Query{From: time.Date(9999, 12, 30, 0, 30, 0, 0, time.UTC), To: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		Interval: Interval{"1h", time.Hour}}
	if first := q.FirstBucket(); !first.Equal(time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("FirstBucket = %v", first)
	}
	if got := len(New(q).Buckets); got != 24 {
		t.Errorf("%d buckets in year 9999, want 24", got)
	}
}

package statsengine

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// floorHour and keptSpan round with time.Truncate, from the zero time; the
// core's AlignDown rounds from 1970. Both lie on every width a part takes,
// so the two agree, before 1970, past 2262, off UTC and within a second.
func TestTruncateAgreesWithAlignDown(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	times := []time.Time{
		time.Date(2026, 11, 28, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 28, 23, 15, 0, 1000, time.UTC),
		time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC),
		time.Date(1901, 3, 2, 4, 45, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 45, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 8, 15, 0, 0, tokyo),
	}
	for _, at := range times {
		if got, want := floorHour(at), stats.AlignDown(at, time.Hour); !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("floorHour(%v) = %v, AlignDown %v", at, got, want)
		}
		for _, iv := range stats.Intervals {
			width := min(iv.Width, time.Hour)
			q := stats.Query{Scope: domain.Scope{Account: "a"}, Interval: iv}
			_, got := keptSpan(q, at, at.Add(time.Hour))
			want := stats.AlignDown(at, width).Equal(at)
			if got != want {
				t.Errorf("keptSpan at %v, width %v: keepable %v, AlignDown says %v", at, width, got, want)
			}
		}
	}
}

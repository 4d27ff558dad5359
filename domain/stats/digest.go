package stats

import (
	"math"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// ExactDurations is how many durations a DurationDigest keeps as they are.
// Up to this many, the sorted values encode (a varint of the gap to the one
// before, about two bytes at 1 ms to 2 s) in no more room than the sketch
// they would become, whose buckets over 1 ms to 2 s number about 950, one
// byte each; so small sets, where the contract asks for exact neighbouring
// ranks, cost nothing extra to keep exact.
const ExactDurations = 512

// sketchAccuracy is the relative error of a sketched duration: every value a
// bucket holds lies within it of the value the bucket is read as. Rounding to
// the microsecond adds at most 0.5 µs, which is 0.4 % from 125 µs up, and
// below 125 µs every microsecond has a bucket of its own (buckets are 0.8 %
// wide), so the rounding gives the exact value back. Both stay within the
// contract's 1 %.
const sketchAccuracy = 0.004

var (
	sketchGamma    = (1 + sketchAccuracy) / (1 - sketchAccuracy)
	sketchLogGamma = math.Log(sketchGamma)
	// maxDigestMicros bounds what a digest holds: a submission's duration is
	// at most MaxDuration.
	maxDigestMicros = domain.MaxDuration.Microseconds()
	maxSketchBucket = sketchBucket(maxDigestMicros)
)

// DurationDigest summarises durations, in whole microseconds, so that the
// digests of parts merge into the digest of the whole: a minute's, a bucket's,
// a range's. Its zero value is empty.
//
// While it holds at most ExactDurations durations it keeps them, sorted, and
// its percentiles are those of Summarise to the bit. Past that it is a sketch
// in the manner of DDSketch: a count per logarithmic bucket, each bucket read
// as the value within sketchAccuracy of all it holds. A percentile is then
// interpolated between the values of the neighbouring ranks as Percentile
// does, and lies within 1 % of the exact one. Whether it is exact depends on
// its count alone, whatever order of Add and Merge built it.
type DurationDigest struct {
	count int64
	// sorted holds the durations while count <= ExactDurations.
	sorted []int64
	// first is the bucket of buckets[0]; buckets counts durations per bucket
	// once count > ExactDurations, its first and last non-zero.
	first   int
	buckets []int64
}

// sketchBucket is the bucket of micros: 0 for 0 µs, and i >= 1 for
// (γ^(i−2), γ^(i−1)] µs.
func sketchBucket(micros int64) int {
	if micros <= 0 {
		return 0
	}
	return 1 + int(math.Ceil(math.Log(float64(micros))/sketchLogGamma))
}

// sketchValue is the value bucket i is read as, in microseconds: the one
// within sketchAccuracy of both of its ends.
func sketchValue(i int) float64 {
	if i == 0 {
		return 0
	}
	return 2 * math.Pow(sketchGamma, float64(i-1)) / (1 + sketchGamma)
}

// Count is how many durations the digest holds.
func (d *DurationDigest) Count() int64 { return d.count }

// Exact reports whether the digest keeps its durations as they are.
func (d *DurationDigest) Exact() bool { return d.count <= ExactDurations }

// Add counts one duration. A duration outside 0 to MaxDuration, which no
// validated message has, is counted at the nearer end.
func (d *DurationDigest) Add(duration time.Duration) {
	micros := min(max(duration.Microseconds(), 0), maxDigestMicros)
	d.count++
	switch {
	case d.count <= ExactDurations:
		at, _ := slices.BinarySearch(d.sorted, micros)
		d.sorted = slices.Insert(d.sorted, at, micros)
	case d.count == ExactDurations+1:
		d.sketchSorted()
		fallthrough
	default:
		d.addToBucket(sketchBucket(micros), 1)
	}
}

// AddSample counts s's duration, if it has one.
func (d *DurationDigest) AddSample(s Sample) {
	if s.HasDuration {
		d.Add(s.Duration)
	}
}

// Merge adds the durations of o, which it leaves as it was.
func (d *DurationDigest) Merge(o *DurationDigest) {
	if o.count == 0 {
		return
	}
	if o == d {
		o = d.Clone()
	}
	if d.count+o.count <= ExactDurations {
		d.sorted = mergeSorted(d.sorted, o.sorted)
		d.count += o.count
		return
	}
	if d.Exact() {
		d.sketchSorted()
	}
	if o.Exact() {
		for _, v := range o.sorted {
			d.addToBucket(sketchBucket(v), 1)
		}
	} else {
		d.addToBucket(o.first, 0) // grows the buckets once to hold o's
		d.addToBucket(o.first+len(o.buckets)-1, 0)
		for i, n := range o.buckets {
			d.buckets[o.first+i-d.first] += n
		}
	}
	d.count += o.count
}

// Subtract takes o's durations, a part of d's, out of d and reports true; or
// reports false, leaving d as it was, when o holds a duration d does not, or
// when d is a sketch and what is left would be a set small enough to keep
// exact (1 to ExactDurations durations), which a sketch cannot give back.
// So a digest of part of a set is told from the digest of the whole and of
// the rest, exactly as the digest of the part itself.
func (d *DurationDigest) Subtract(o *DurationDigest) bool {
	rest := d.count - o.count
	switch {
	case o.count == 0:
		return true
	case rest < 0:
		return false
	case d.Exact(): // o, no larger, is exact too
		left := make([]int64, 0, rest)
		taken := 0
		for _, v := range d.sorted {
			if taken < len(o.sorted) && o.sorted[taken] == v {
				taken++
				continue
			}
			if taken < len(o.sorted) && o.sorted[taken] < v {
				return false
			}
			left = append(left, v)
		}
		if taken < len(o.sorted) {
			return false
		}
		d.count, d.sorted = rest, left
		return true
	case rest > 0 && rest <= ExactDurations:
		return false
	}
	buckets := slices.Clone(d.buckets)
	take := func(i int, n int64) bool {
		if i -= d.first; i < 0 || i >= len(buckets) || buckets[i] < n {
			return false
		}
		buckets[i] -= n
		return true
	}
	if o.Exact() {
		for _, v := range o.sorted {
			if !take(sketchBucket(v), 1) {
				return false
			}
		}
	} else {
		for i, n := range o.buckets {
			if n > 0 && !take(o.first+i, n) {
				return false
			}
		}
	}
	lo, hi := 0, len(buckets)
	for lo < hi && buckets[lo] == 0 {
		lo++
	}
	for hi > lo && buckets[hi-1] == 0 {
		hi--
	}
	if rest == 0 {
		d.Reset()
		return true
	}
	d.count, d.first, d.buckets = rest, d.first+lo, buckets[lo:hi]
	return true
}

// Sorted is the durations in whole microseconds, ascending, while the digest
// is exact, for an encoding to write; empty once it is a sketch. The slice is
// the digest's own: read it, do not keep it.
func (d *DurationDigest) Sorted() []int64 { return d.sorted }

// Sketch is the digest's buckets once it is not exact, for an encoding to
// write: first is the bucket of buckets[0], and each counts its durations.
// The slice is the digest's own: read it, do not keep it.
func (d *DurationDigest) Sketch() (first int, buckets []int64) {
	return d.first, d.buckets
}

// SetSorted makes the digest the exact one of sorted, durations in whole
// microseconds as Sorted gives them, taking the slice. It reports false,
// leaving the digest empty, unless they are at most ExactDurations, ascending,
// and within 0 to MaxDuration.
func (d *DurationDigest) SetSorted(sorted []int64) bool {
	d.Reset()
	if len(sorted) > ExactDurations || len(sorted) > 0 && (sorted[0] < 0 || sorted[len(sorted)-1] > maxDigestMicros) {
		return false
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i] < sorted[i-1] {
			return false
		}
	}
	d.count, d.sorted = int64(len(sorted)), sorted
	return true
}

// SetSketch makes the digest the sketch of count durations that Sketch gave,
// taking the slice. It reports false, leaving the digest empty, unless count
// is past ExactDurations and the buckets, first and last non-empty, within
// the sketch's range, count it.
func (d *DurationDigest) SetSketch(count int64, first int, buckets []int64) bool {
	d.Reset()
	if count <= ExactDurations || len(buckets) == 0 || first < 0 || first > maxSketchBucket || len(buckets) > maxSketchBucket+1-first ||
		buckets[0] <= 0 || buckets[len(buckets)-1] <= 0 {
		return false
	}
	var sum int64
	for _, n := range buckets {
		if n < 0 || n > count-sum {
			return false
		}
		sum += n
	}
	if sum != count {
		return false
	}
	d.count, d.first, d.buckets = count, first, buckets
	return true
}

// Reset empties the digest, keeping its memory.
func (d *DurationDigest) Reset() {
	d.count, d.sorted, d.first, d.buckets = 0, d.sorted[:0], 0, d.buckets[:0]
}

// Clone returns a copy of d that shares no memory with it.
func (d *DurationDigest) Clone() *DurationDigest {
	return &DurationDigest{count: d.count, sorted: slices.Clone(d.sorted), first: d.first, buckets: slices.Clone(d.buckets)}
}

// mergeSorted returns the sorted values of a and b, in a's memory where it
// has room.
func mergeSorted(a, b []int64) []int64 {
	i, j := len(a)-1, len(b)-1
	a = append(a, b...)
	for k := len(a) - 1; j >= 0; k-- {
		if i >= 0 && a[i] > b[j] {
			a[k] = a[i]
			i--
		} else {
			a[k] = b[j]
			j--
		}
	}
	return a
}

// sketchSorted turns the kept durations into bucket counts.
func (d *DurationDigest) sketchSorted() {
	sorted := d.sorted
	d.sorted = nil
	for _, v := range sorted {
		d.addToBucket(sketchBucket(v), 1)
	}
}

// addToBucket adds n durations to bucket i, growing the buckets to hold it.
func (d *DurationDigest) addToBucket(i int, n int64) {
	switch {
	case len(d.buckets) == 0:
		d.first, d.buckets = i, []int64{0}
	case i < d.first:
		d.buckets = slices.Insert(d.buckets, 0, make([]int64, d.first-i)...)
		d.first = i
	case i >= d.first+len(d.buckets):
		d.buckets = append(d.buckets, make([]int64, i-d.first-len(d.buckets)+1)...)
	}
	d.buckets[i-d.first] += n
}

// Summary is the count and percentiles of the durations, in milliseconds.
func (d *DurationDigest) Summary() DurationSummary {
	if d.count == 0 {
		return DurationSummary{}
	}
	s := DurationSummary{Count: d.count}
	percentiles := []struct {
		p   float64
		out *float64
	}{{0.50, &s.P50}, {0.95, &s.P95}, {0.99, &s.P99}}
	// The ranks each percentile interpolates between, ascending, so that a
	// sketch is walked once.
	var ranks [6]int64
	for k, pc := range percentiles {
		lo, hi, _ := percentileRanks(int(d.count), pc.p)
		ranks[2*k], ranks[2*k+1] = int64(lo), int64(hi)
	}
	values := d.valuesAt(ranks)
	for k, pc := range percentiles {
		_, _, rank := percentileRanks(int(d.count), pc.p)
		*pc.out = interpolate(values[2*k]/1000, values[2*k+1]/1000, rank-float64(ranks[2*k]))
	}
	return s
}

// valuesAt returns the durations of ranks, which ascend, in microseconds.
func (d *DurationDigest) valuesAt(ranks [6]int64) [6]float64 {
	var values [6]float64
	if d.Exact() {
		for k, r := range ranks {
			values[k] = float64(d.sorted[r])
		}
		return values
	}
	k, below := 0, int64(0) // durations in the buckets before i
	for i, n := range d.buckets {
		below += n
		for ; k < len(ranks) && ranks[k] < below; k++ {
			values[k] = sketchValue(d.first + i)
		}
	}
	return values
}

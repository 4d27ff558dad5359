package rollupcodec

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
)

// testRollups are rollups of every shape a store writes: the load tool's
// minutes, one of sketched durations, one whose paths pruned (debts), one whose
// routes pruned (version 3), and the empty one.
func testRollups(rng *rand.Rand) []*stats.Rollup {
	g := loadTraffic{rng}
	var out []*stats.Rollup
	for i := range 3 {
		for _, r := range g.minuteRollups(rollupBase.Add(time.Duration(i)*time.Minute), messagesPerMinute) {
			out = append(out, r)
		}
	}
	sketched, paths, routes := &stats.Rollup{}, &stats.Rollup{}, &stats.Rollup{}
	for i := range 3000 {
		m := g.message(rollupBase)
		m.Route = fmt.Sprintf("/v1/items/{id}/%d", i%7)
		sketched.AddMessage(m)
	}
	// A few keys of many messages and many of one: a prune keeps the few,
	// with a debt.
	for i := range 2*stats.MaxRankedKeys + 2000 {
		path := fmt.Sprintf("/p/%d", i)
		if i < 2000 {
			path = fmt.Sprintf("/p/heavy/%d", i%20)
		}
		paths.Add(stats.Sample{Path: path, StatusCode: 200 + i%300, Duration: time.Duration(i), HasDuration: true})
	}
	for i := range 2*stats.MaxRankedRoutes + 2000 {
		route := fmt.Sprintf("/r/%d/{id}", i)
		if i < 2000 {
			route = fmt.Sprintf("/r/heavy/%d", i%20)
		}
		routes.Add(stats.Sample{Path: "/r", Route: route, StatusCode: 500, Duration: time.Millisecond, HasDuration: i%3 == 0})
	}
	// Tallies (what ingest rules dropped): versions 4, and 5 with pruned routes.
	tallied := &stats.Rollup{}
	for i := range 50 {
		m := g.message(rollupBase)
		m.Tally = i%3 == 0
		tallied.AddMessage(m)
	}
	talliedRoutes := &stats.Rollup{}
	talliedRoutes.Merge(routes)
	talliedRoutes.Dropped = 7
	return append(out, sketched, paths, routes, tallied, talliedRoutes, &stats.Rollup{})
}

// equalRollups reports how a and b differ, or "".
func equalRollups(a, b *stats.Rollup) string {
	switch {
	case a.Count != b.Count || a.Dropped != b.Dropped || a.Status != b.Status:
		return fmt.Sprintf("counts %d (%d dropped) %v, want %d (%d) %v", a.Count, a.Dropped, a.Status, b.Count, b.Dropped, b.Status)
	case a.AllVisibleAt.UnixMicro() != b.AllVisibleAt.UnixMicro() || a.FirstExpiresAt.UnixMicro() != b.FirstExpiresAt.UnixMicro():
		return "times differ (to the microsecond, as they are kept)"
	case a.Durations.Summary() != b.Durations.Summary():
		return fmt.Sprintf("durations %+v, want %+v", a.Durations.Summary(), b.Durations.Summary())
	case !slices.Equal(a.Paths.Top(math.MaxInt32), b.Paths.Top(math.MaxInt32)):
		return "paths differ"
	case !slices.Equal(stats.TopRouteStats(&a.Routes, math.MaxInt32), stats.TopRouteStats(&b.Routes, math.MaxInt32)):
		return "routes differ"
	}
	return ""
}

func TestRollupRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var decoder Decoder
	versions := map[byte]int{}
	pathDebts := 0
	for i, r := range testRollups(rng) {
		data := AppendRollup(nil, r)
		versions[data[0]]++
		if hasDebt(r.Paths.Entries()) {
			pathDebts++
		}
		var back stats.Rollup
		if err := decoder.Rollup(data, &back); err != nil {
			t.Fatalf("rollup %d: %v", i, err)
		}
		if diff := equalRollups(&back, r); diff != "" {
			t.Fatalf("rollup %d decoded: %s", i, diff)
		}
		if again := AppendRollup(nil, &back); !bytes.Equal(again, data) {
			t.Fatalf("rollup %d encodes differently once decoded", i)
		}
		// Merging goes on from the decoded rollup as from the original.
		var fromOriginal, fromDecoded stats.Rollup
		fromOriginal.Merge(r)
		fromOriginal.Merge(r)
		fromDecoded.Merge(&back)
		fromDecoded.Merge(&back)
		if diff := equalRollups(&fromDecoded, &fromOriginal); diff != "" {
			t.Fatalf("rollup %d merged once decoded: %s", i, diff)
		}
		for range min(len(data), 100) { // every truncation is refused
			cut := rng.IntN(len(data))
			if err := decoder.Rollup(data[:cut], &back); !errors.Is(err, ErrInvalidEncoding) || back.Count != 0 {
				t.Fatalf("rollup %d cut to %d of %d bytes: %v", i, cut, len(data), err)
			}
		}
	}
	if versions[rollupV2] == 0 || versions[rollupV3] != 1 || versions[rollupV4] != 1 || versions[rollupV5] != 1 || pathDebts != 1 {
		t.Errorf("versions written %v, %d with debts of paths: want version 2, 3 for the rollup whose routes pruned alone, 4 and 5 for those with tallies; one whose paths pruned",
			versions, pathDebts)
	}
}

// Rollups written by earlier versions read as they did.
func TestRollupsWrittenBefore(t *testing.T) {
	f, err := os.Open("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	golden := map[string][]byte{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		name, h, _ := strings.Cut(sc.Text(), " ")
		if golden[name], err = hex.DecodeString(h); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"v2big": "700 [0 175 175 175 175] {622 122.035 440.674 477.377} [{/p/0 54 26} {/p/1 54 27} {/p/10 54 28}] " +
			"[{/r/{id}/0 140 70 {124 120.763 434.614 474.519}} {/r/{id}/1 140 70 {125 119.716 435.604 475.829}}]",
		"v2small": "2 [0 1 0 1 0] {1 1.5 1.5 1.5} [{/a 2 1}] [{/a 1 0 {0 0 0 0}}]",
		"v1small": "2 [0 1 0 1 0] {1 1.5 1.5 1.5} [{/a 2 1}] []",
	} {
		var r stats.Rollup
		if err := DecodeRollup(golden[name], &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := fmt.Sprint(r.Count, " ", r.Status, " ", r.Durations.Summary(), " ", r.Paths.Top(3), " ", stats.TopRouteStats(&r.Routes, 2))
		if got != want {
			t.Errorf("%s reads as %s, want %s", name, got, want)
		}
		if name != "v1small" && !bytes.Equal(AppendRollup(nil, &r), golden[name]) {
			t.Errorf("%s is written again otherwise", name)
		}
	}
}

func TestDamagedRollups(t *testing.T) {
	data := AppendRollup(nil, &stats.Rollup{})
	var back stats.Rollup
	if err := DecodeRollup(data, &back); err != nil || !back.ReadableAt(rollupBase) || back.Count != 0 {
		t.Errorf("the empty rollup: %v", err)
	}
	for _, b := range [][]byte{
		nil, {6}, // no version, a later version
		append(append([]byte{4}, data[1:]...), 1),                    // a tally of no message
		append(append([]byte{4}, data[1:]...), 0),                    // version 4 of no tally
		append([]byte{2, 2, 1, 0, 0, 0, 0}, data[7:]...),             // two messages, one in a status class
		append(slices.Clone(data[:len(data)-1]), 1, 1, '/', 2, 0, 0), // a route of 2 messages in a rollup of none
		append(slices.Clone(data[:len(data)-1]), 1, 1, 'x', 1, 0, 0), // a route that is no template
		data[:len(data)-1], // version 2 without its routes
	} {
		if err := DecodeRollup(b, &back); !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("DecodeRollup(%v) = %v, want ErrInvalidEncoding", b, err)
		}
	}
}

func TestDigestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 100, stats.ExactDurations, stats.ExactDurations + 1, 20_000} {
		var d stats.DurationDigest
		for range n {
			d.Add(time.Duration(rng.Int64N(int64(25*time.Hour))) - time.Hour)
		}
		data := AppendDigest(nil, &d)
		var back stats.DurationDigest
		if err := DecodeDigest(data, &back); err != nil {
			t.Fatalf("%d durations: %v", n, err)
		}
		if back.Summary() != d.Summary() {
			t.Errorf("%d durations: decoded %+v, encoded %+v", n, back.Summary(), d.Summary())
		}
		if again := AppendDigest(nil, &back); !bytes.Equal(again, data) {
			t.Errorf("%d durations: encodes differently once decoded", n)
		}
	}
	// Damaged encodings: an error, and nothing kept.
	var d stats.DurationDigest
	for _, data := range [][]byte{
		nil, {}, {2, 0}, {1}, {1, 1}, {1, 1, 0, 0}, // version, truncated, trailing bytes
		{1, 2, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // a gap past a day
		append([]byte{1, 0x81, 0x04}, make([]byte, 3)...),                     // 513 durations as a sketch, cut short
		{1, 0x81, 0x04, 0, 1, 0x81, 0x03},                                     // a sketch of 513 in one bucket that holds 385
	} {
		d.Add(time.Millisecond)
		if err := DecodeDigest(data, &d); !errors.Is(err, ErrInvalidEncoding) || d.Count() != 0 {
			t.Errorf("DecodeDigest(%v) = %v with %d durations kept, want ErrInvalidEncoding and none", data, err, d.Count())
		}
	}
}

func TestKeysRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var decoder Decoder
	for _, keys := range []int{300, 2*stats.MaxRankedKeys + 700} { // without debts and with
		var c stats.KeyCounter
		for i := range 3 * keys {
			c.Add(fmt.Sprintf("/k/%d", rng.IntN(keys)), i%5 == 0)
		}
		c.Add("", false)
		c.Add("/ü/\x00", true)
		data := AppendKeys(nil, &c)
		var back stats.KeyCounter
		if err := decoder.Keys(data, &back); err != nil {
			t.Fatalf("%d keys: %v", keys, err)
		}
		if got, want := back.Top(back.Len()), c.Top(c.Len()); !slices.Equal(got, want) {
			t.Errorf("%d keys: decoded %v, encoded %v", keys, got[:min(5, len(got))], want[:min(5, len(want))])
		}
		// Merging goes on from the decoded counter as from the original.
		var more stats.KeyCounter
		for range 500 {
			more.Add(fmt.Sprintf("/k/%d", rng.IntN(keys)), false)
		}
		c.Merge(&more)
		back.Merge(&more)
		if !slices.Equal(back.Top(back.Len()), c.Top(c.Len())) {
			t.Errorf("%d keys: a decoded counter merges differently", keys)
		}
		if again := AppendKeys(nil, &back); bytes.Equal(again, data) {
			t.Errorf("%d keys: merging did not change the encoding", keys)
		}
	}
	var c stats.KeyCounter
	for _, data := range [][]byte{
		nil, {2, 0, 0}, {1, 1}, {1, 0, 0, 0},
		{1, 2, 0, 0, 1, 'a', 1, 0},                  // two keys in five bytes
		{1, 2, 0, 0, 1, 'b', 1, 0, 0, 1, 'a', 1, 0}, // out of order
		{1, 1, 0, 0, 1, 'a', 1, 2},                  // more errors than messages
		{1, 1, 1, 0, 1, 'a', 2, 0, 2},               // debt as large as the count
		{1, 1, 0, 3, 1, 'a', 2, 0},                  // a prefix longer than the key before
		{1, 1, 0, 0, 1, 'a', 0, 0},                  // counted no time
		{1, 1, 0, 0, 1, 'a', 1, 0, 0},               // a byte past the end
	} {
		c.Add("x", false)
		if err := decoder.Keys(data, &c); !errors.Is(err, ErrInvalidEncoding) || c.Len() != 0 {
			t.Errorf("Keys(%v) = %v keeping %d keys, want ErrInvalidEncoding and none", data, err, c.Len())
		}
	}
}

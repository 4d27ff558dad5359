package elastic_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A store with Shards 2 creates its daily indices with two primary shards,
// and its statistics, merged from both, are what the memory store computes
// from the same messages.
func TestStatsOverSeveralShards(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t, func(c *elastic.Config) { c.Shards = 2 })
	at := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	rng := rand.New(rand.NewPCG(19, 2))
	msgs := make([]domain.Message, 600)
	for i := range msgs {
		m := message(t, at.Add(time.Duration(i)*time.Second))
		m.Path = fmt.Sprintf("/v1/orders/%d", rng.IntN(40)) // repeated keys, so each is counted on both shards
		m.Name = []string{"checkout", "search", "billing"}[rng.IntN(3)]
		m.StatusCode = []int{200, 201, 302, 404, 500}[rng.IntN(5)]
		if i%7 != 0 {
			m.Duration, m.HasDuration = time.Duration(math.Exp(3+1.5*rng.NormFloat64())*1000)*time.Microsecond, true
		}
		msgs[i] = m
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	var settings map[string]struct {
		Settings struct {
			Index struct {
				Shards string `json:"number_of_shards"`
			} `json:"index"`
		} `json:"settings"`
	}
	index := cfg.IndexPrefix + "-messages-" + at.Format("2006.01.02")
	c.must(http.MethodGet, "/"+index+"/_settings", nil, &settings)
	if got := settings[index].Settings.Index.Shards; got != "2" {
		t.Fatalf("%s has %s primary shards, want 2", index, got)
	}

	q := hourStats(at)
	now := at.Add(time.Hour)
	got := statsOnceCounted(t, s, q, now, int64(len(msgs)))
	mem := memory.New()
	if err := mem.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	want, err := mem.Stats(t.Context(), q, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.TopPaths, want.TopPaths) || !slices.Equal(got.TopNames, want.TopNames) {
		t.Errorf("top paths %v, names %v; the memory store's %v, %v", got.TopPaths, got.TopNames, want.TopPaths, want.TopNames)
	}
	buckets := append([]stats.Bucket{got.Total}, got.Buckets...)
	wantBuckets := append([]stats.Bucket{want.Total}, want.Buckets...)
	for i := range buckets {
		g, w := buckets[i], wantBuckets[i]
		if g.Count != w.Count || g.Status != w.Status || g.Duration.Count != w.Duration.Count {
			t.Errorf("bucket %d: %d messages %v, %d durations; the memory store's %d %v, %d", i, g.Count, g.Status,
				g.Duration.Count, w.Count, w.Status, w.Duration.Count)
		}
		for p, v := range percentiles(g.Duration) {
			if exact := percentiles(w.Duration)[p]; math.Abs(v-exact) > 0.01*exact {
				t.Errorf("bucket %d: p%g %g, the memory store's %g", i, 100*p, v, exact)
			}
		}
	}
}

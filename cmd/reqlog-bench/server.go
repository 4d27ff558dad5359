package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// server is a running reqlog service the tool talks to.
type server struct {
	base   string // e.g. http://127.0.0.1:8080
	key    string
	client *http.Client
}

// newServer refuses anything but a loopback address: load is only ever sent to
// this machine.
func newServer(rawURL, key string) (*server, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-url %q is not an http:// URL", rawURL)
	}
	if !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("-url %q is not on this machine: the tool only sends load to loopback addresses", rawURL)
	}
	return &server{base: strings.TrimSuffix(u.String(), "/"), key: key,
		client: &http.Client{Timeout: 30 * time.Second}}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *server) header() http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if s.key != "" {
		h.Set("Authorization", "Bearer "+s.key)
	}
	return h
}

// waitHealthy polls /healthz until it answers 200 or within passes.
func (s *server) waitHealthy(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		status, _, err := s.get(ctx, "/healthz")
		if err == nil && status == http.StatusOK || !time.Now().Before(deadline) {
			return nil // without -wait, or once it is up: the run reports any problem
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ingestTargets posts the pooled bodies round robin.
func (s *server) ingestTargets(bodies [][]byte) vegeta.Targeter {
	rr := &roundRobin[[]byte]{items: bodies}
	header := s.header()
	return func(t *vegeta.Target) error {
		*t = vegeta.Target{Method: http.MethodPost, URL: s.base + "/v1/messages", Body: rr.take(), Header: header}
		return nil
	}
}

// liveTargets posts bodies of items submissions generated as they are sent,
// created then.
func (s *server) liveTargets(gen *generator, items int) vegeta.Targeter {
	var mu sync.Mutex
	header := s.header()
	return func(t *vegeta.Target) error {
		mu.Lock()
		batch := make([]submission, items)
		now := time.Now()
		for i := range batch {
			batch[i] = gen.submission(now)
		}
		mu.Unlock()
		*t = vegeta.Target{Method: http.MethodPost, URL: s.base + "/v1/messages", Body: body(batch), Header: header}
		return nil
	}
}

// fetchMix is the read traffic of a portal and a support team: mostly first pages,
// some filtered, some paging on, some single lookups.
type fetchMix struct {
	first, byName, byStatus, large, cursors, gets roundRobin[string]
	pick                                          weighted[int]
}

// prepareFetch walks a few pages to collect cursors and ids for the fetch mix.
func (s *server) prepareFetch(ctx context.Context) (*fetchMix, error) {
	mix := &fetchMix{pick: newWeighted[int](0, 40, 1, 15, 2, 10, 3, 10, 4, 15, 5, 10)}
	q := s.base + "/v1/messages?limit="
	mix.first.items = []string{q + "20"}
	mix.large.items = []string{q + "100"}
	for _, app := range applications {
		mix.byName.items = append(mix.byName.items, q+"20&name="+app)
	}
	mix.byStatus.items = []string{q + "20&status_code=5xx", q + "20&status_code=4xx", q + "20&status_code=201"}
	cursor := ""
	for range 20 {
		page, err := s.list(ctx, "limit=100"+cursor)
		if err != nil {
			return nil, err
		}
		for _, m := range page.Messages {
			mix.gets.items = append(mix.gets.items, s.base+"/v1/messages/"+m.ID, s.base+"/v1/messages/"+m.Reference)
		}
		if page.Pagination.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + url.QueryEscape(*page.Pagination.NextCursor)
		mix.cursors.items = append(mix.cursors.items, q+"20"+cursor)
	}
	if len(mix.gets.items) == 0 {
		return nil, errors.New("the server lists no messages: seed it first (reqlog-bench seed), and mind its visibility delay")
	}
	if len(mix.cursors.items) == 0 {
		mix.cursors.items = mix.first.items
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(mix.gets.items), func(i, j int) {
		mix.gets.items[i], mix.gets.items[j] = mix.gets.items[j], mix.gets.items[i]
	})
	return mix, nil
}

func (s *server) fetchTargets(mix *fetchMix, seed uint64) vegeta.Targeter {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	header := s.header()
	sources := []*roundRobin[string]{&mix.first, &mix.byName, &mix.byStatus, &mix.large, &mix.cursors, &mix.gets}
	return func(t *vegeta.Target) error {
		mu.Lock()
		source := sources[mix.pick.pick(rng)]
		mu.Unlock()
		*t = vegeta.Target{Method: http.MethodGet, URL: source.take(), Header: header}
		return nil
	}
}

// mixedTargets sends a write with probability writeShare, else a read.
func mixedTargets(writes, reads vegeta.Targeter, writeShare float64, seed uint64) vegeta.Targeter {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 11))
	return func(t *vegeta.Target) error {
		mu.Lock()
		write := rng.Float64() < writeShare
		mu.Unlock()
		if write {
			return writes(t)
		}
		return reads(t)
	}
}

type pageReply struct {
	Messages []struct {
		ID        string `json:"id"`
		Reference string `json:"reference"`
	} `json:"messages"`
	Pagination struct {
		NextCursor *string `json:"next_cursor"`
	} `json:"pagination"`
}

func (s *server) list(ctx context.Context, query string) (pageReply, error) {
	var page pageReply
	status, body, err := s.get(ctx, "/v1/messages?"+query)
	if err != nil {
		return page, err
	}
	if status != http.StatusOK {
		return page, fmt.Errorf("GET /v1/messages?%s: %d %s", query, status, body)
	}
	return page, json.Unmarshal(body, &page)
}

func (s *server) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header = s.header()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, body, err
}

// verification is what looking up every acknowledged message found.
type verification struct {
	acknowledged, found int
	missing             []string // the first few
	took                time.Duration
}

// verify looks up every id until it is readable or the deadline passes (the
// server's visibility delay, an outage), with a few lookups in flight.
func (s *server) verify(ctx context.Context, ids []string, deadline time.Duration) verification {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	began := time.Now()
	var found atomic.Int64
	var mu sync.Mutex
	var missing []string
	next := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range next {
				if s.lookUp(ctx, id) {
					found.Add(1)
					continue
				}
				mu.Lock()
				missing = append(missing, id)
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return verification{acknowledged: len(ids), found: int(found.Load()), missing: missing[:min(len(missing), 10)],
		took: time.Since(began)}
}

// lookUp polls GET /v1/messages/{id} until it answers 200 or ctx ends.
func (s *server) lookUp(ctx context.Context, id string) bool {
	for {
		status, _, err := s.get(ctx, "/v1/messages/"+id)
		if err == nil && status == http.StatusOK {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sample is the server's memory at one moment of an attack.
type sample struct {
	at                       time.Duration
	requests, ok, refused    int64
	unavailable, failed      int64
	residentBytes, heapBytes float64 // -1: unknown
}

// sampler reads the server's memory from its Prometheus metrics every interval
// (process_resident_memory_bytes, go_memstats_heap_inuse_bytes). A nil sampler
// does nothing.
type sampler struct {
	server   *server
	interval time.Duration
	out      io.Writer
}

func (sm *sampler) start(c *counters) (stop func() []sample) {
	if sm == nil || sm.interval <= 0 {
		return func() []sample { return nil }
	}
	began := time.Now()
	done := make(chan struct{})
	var samples []sample
	var wg sync.WaitGroup
	take := func() {
		rss, heap := sm.server.memory()
		smp := sample{at: time.Since(began).Round(time.Second), requests: c.requests.Load(), ok: c.ok.Load(),
			refused: c.refused.Load(), unavailable: c.unavailable.Load(), failed: c.failed.Load(),
			residentBytes: rss, heapBytes: heap}
		samples = append(samples, smp)
		fmt.Fprintf(sm.out, "  t=%-5s requests=%-7d ok=%-7d 429=%-7d 503=%-6d failed=%-5d rss=%s heap=%s\n", smp.at,
			smp.requests, smp.ok, smp.refused, smp.unavailable, smp.failed, mib(rss), mib(heap))
	}
	wg.Go(func() {
		tick := time.NewTicker(sm.interval)
		defer tick.Stop()
		take()
		for {
			select {
			case <-done:
				take()
				return
			case <-tick.C:
				take()
			}
		}
	})
	return func() []sample {
		close(done)
		wg.Wait()
		return samples
	}
}

func mib(bytes float64) string {
	if bytes < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0fMiB", bytes/(1<<20))
}

// memory reads the server's resident and heap bytes from /metrics; -1 when the
// server does not say.
func (s *server) memory() (resident, heap float64) {
	resident, heap = -1, -1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, body, err := s.get(ctx, "/metrics")
	if err != nil || status != http.StatusOK {
		return resident, heap
	}
	lines := bufio.NewScanner(strings.NewReader(string(body)))
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			resident = v
		case "go_memstats_heap_inuse_bytes":
			heap = v
		}
	}
	return resident, heap
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// load is how hard an attack pushes: a fixed number of connections each sending
// as fast as answers come back (closed model), or a fixed rate (open model).
type load struct {
	connections int
	rate        int // requests per second; 0: closed model
	duration    time.Duration
	timeout     time.Duration
	maxWorkers  int // open model: most requests in flight
}

func (l load) String() string {
	if l.rate > 0 {
		return fmt.Sprintf("%d req/s for %s", l.rate, l.duration)
	}
	if l.duration == maxDuration {
		return fmt.Sprintf("%d connections until done", l.connections)
	}
	return fmt.Sprintf("%d connections for %s", l.connections, l.duration)
}

func (l load) attacker(keepBodies bool) *vegeta.Attacker {
	idle := max(l.connections, 1)
	if l.rate > 0 {
		// Every worker keeps its connection, as clients with keep-alive do: a
		// smaller idle pool closes and redials connections at the attack's rate,
		// and that churn, not the service, sets the latency.
		idle = max(idle, l.maxWorkers)
	}
	opts := []func(*vegeta.Attacker){
		vegeta.Timeout(l.timeout),
		vegeta.Connections(idle),
		vegeta.KeepAlive(true),
		vegeta.Redirects(vegeta.NoFollow),
	}
	if !keepBodies {
		opts = append(opts, vegeta.MaxBody(0))
	}
	if l.rate > 0 {
		opts = append(opts, vegeta.Workers(uint64(max(l.connections, 1))), vegeta.MaxWorkers(uint64(l.maxWorkers)))
	} else {
		opts = append(opts, vegeta.Workers(uint64(l.connections)), vegeta.MaxWorkers(uint64(l.connections)),
			vegeta.MaxConnections(l.connections))
	}
	return vegeta.NewAttacker(opts...)
}

func (l load) pacer() vegeta.Pacer {
	return vegeta.ConstantPacer{Freq: l.rate, Per: time.Second}
}

// Outcomes of a request.
const (
	outcomeOK          = "ok"          // 2xx
	outcomeRefused     = "refused"     // 429: the queue is full, answered at once
	outcomeUnavailable = "unavailable" // 503: the store failed or was too slow
	outcomeFailed      = "failed"      // anything else, or no answer
)

func outcomeOf(r *vegeta.Result) string {
	switch {
	case r.Code >= 200 && r.Code < 300:
		return outcomeOK
	case r.Code == http.StatusTooManyRequests:
		return outcomeRefused
	case r.Code == http.StatusServiceUnavailable:
		return outcomeUnavailable
	default:
		return outcomeFailed
	}
}

// report is what one attack measured.
type report struct {
	title     string
	load      load
	items     int // messages per ingest request
	all       *vegeta.Metrics
	byKind    map[string]*vegeta.Metrics
	byOutcome map[string]*vegeta.Metrics
	acked     []string // ids of acknowledged messages, when asked for
	samples   []sample
	errors    map[string]int
}

// ingestRate is acknowledged messages per second.
func (r *report) ingestRate() float64 {
	m := r.byKind[kindIngest]
	if m == nil || m.Duration+m.Wait <= 0 {
		return 0
	}
	return r.ingested() / (m.Duration + m.Wait).Seconds()
}

// ingested is the number of acknowledged messages.
func (r *report) ingested() float64 {
	m := r.byKind[kindIngest]
	if m == nil {
		return 0
	}
	return float64(m.StatusCodes["200"] * r.items)
}

// counters are read by the sampler while an attack runs.
type counters struct {
	requests, ok, refused, unavailable, failed atomic.Int64
}

// attack runs targeter under l and collects a report; sampler, if not nil, reads
// the server's memory as it goes.
func attack(title string, l load, items int, targeter vegeta.Targeter, keepIDs bool, sampler *sampler) *report {
	rep := &report{title: title, load: l, items: items, all: &vegeta.Metrics{},
		byKind: map[string]*vegeta.Metrics{}, byOutcome: map[string]*vegeta.Metrics{}, errors: map[string]int{}}
	attacker := l.attacker(keepIDs)
	// Ctrl-C or SIGTERM ends the attack early with a report of what was sent:
	// vegeta runs for its whole duration otherwise (up to two hours).
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	attacking := make(chan struct{})
	defer func() {
		signal.Stop(interrupted)
		close(attacking)
	}()
	go func() {
		select {
		case <-interrupted:
			attacker.Stop()
		case <-attacking:
		}
	}()
	var c counters
	stopSampling := sampler.start(&c)
	for res := range attacker.Attack(targeter, l.pacer(), l.duration, title) {
		if res.Error == errNoTargets.Error() {
			continue // the targeter ran dry: not a request
		}
		c.requests.Add(1)
		outcome := outcomeOf(res)
		switch outcome {
		case outcomeOK:
			c.ok.Add(1)
		case outcomeRefused:
			c.refused.Add(1)
		case outcomeUnavailable:
			c.unavailable.Add(1)
		default:
			c.failed.Add(1)
			if len(rep.errors) < 20 || rep.errors[res.Error] > 0 {
				rep.errors[res.Error]++
			}
		}
		rep.all.Add(res)
		metricsFor(rep.byKind, kindOf(res.Method, res.URL)).Add(res)
		metricsFor(rep.byOutcome, outcome).Add(res)
		if keepIDs && outcome == outcomeOK && res.Method == http.MethodPost {
			rep.acked = append(rep.acked, acknowledgedIDs(res.Body)...)
		}
	}
	rep.samples = stopSampling()
	rep.all.Close()
	for _, m := range rep.byKind {
		m.Close()
	}
	for _, m := range rep.byOutcome {
		m.Close()
	}
	return rep
}

func metricsFor(set map[string]*vegeta.Metrics, key string) *vegeta.Metrics {
	m := set[key]
	if m == nil {
		m = &vegeta.Metrics{}
		set[key] = m
	}
	return m
}

// acknowledgedIDs reads the ids of a submit reply ("data" is one identity or an
// array of them).
func acknowledgedIDs(body []byte) []string {
	var reply struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &reply) != nil {
		return nil
	}
	type identity struct {
		ID string `json:"id"`
	}
	var many []identity
	if json.Unmarshal(reply.Data, &many) != nil {
		var one identity
		if json.Unmarshal(reply.Data, &one) != nil {
			return nil
		}
		many = []identity{one}
	}
	ids := make([]string, len(many))
	for i, id := range many {
		ids[i] = id.ID
	}
	return ids
}

// print writes the report as a table: one row per request kind and outcome.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %s\n", r.title, r.load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\trequests\tok/s\tok %\tp50\tp90\tp99\tmax\t")
	row := func(name string, m *vegeta.Metrics) {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t\n", name, m.Requests, m.Throughput, m.Success*100,
			ms(m.Latencies.P50), ms(m.Latencies.P90), ms(m.Latencies.P99), ms(m.Latencies.Max))
	}
	for _, kind := range sortedKeys(r.byKind) {
		row(kind, r.byKind[kind])
	}
	if len(r.byOutcome) > 1 {
		for _, outcome := range sortedKeys(r.byOutcome) {
			row("("+outcome+")", r.byOutcome[outcome])
		}
	}
	row("all", r.all)
	_ = tw.Flush()
	if rate := r.ingestRate(); rate > 0 {
		fmt.Fprintf(w, "ingest: %.0f messages/s acknowledged (%d per request)\n", rate, r.items)
	}
	fmt.Fprintf(w, "status codes: %v\n", r.all.StatusCodes)
	for msg, n := range r.errors {
		fmt.Fprintf(w, "error x%d: %s\n", n, msg)
	}
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Request kinds, for the report's rows.
const (
	kindIngest = "ingest"
	kindGet    = "get"
	kindPage   = "list:cursor"
	kindName   = "list:name"
	kindStatus = "list:status"
	kindLarge  = "list:limit100"
	kindFirst  = "list:first"
	kindSearch = "list:q"
	kindStats  = "stats"
	kindOther  = "other"
)

func kindOf(method, url string) string {
	switch {
	case method == http.MethodPost:
		return kindIngest
	case strings.Contains(url, "/v1/stats"):
		return kindStats
	case strings.Contains(url, "/v1/messages/"):
		return kindGet
	case strings.Contains(url, "?q=") || strings.Contains(url, "&q="):
		return kindSearch
	case strings.Contains(url, "cursor="):
		return kindPage
	case strings.Contains(url, "name="):
		return kindName
	case strings.Contains(url, "status_code="):
		return kindStatus
	case strings.Contains(url, "limit=100"):
		return kindLarge
	case strings.Contains(url, "/v1/messages"):
		return kindFirst
	default:
		return kindOther
	}
}

// roundRobin cycles through items; safe for vegeta's concurrent workers.
type roundRobin[T any] struct {
	items []T
	next  atomic.Uint64
}

func (r *roundRobin[T]) take() T {
	return r.items[(r.next.Add(1)-1)%uint64(len(r.items))]
}

// limited stops a targeter after n targets.
func limited(n int64, tr vegeta.Targeter) vegeta.Targeter {
	var issued atomic.Int64
	return func(t *vegeta.Target) error {
		if issued.Add(1) > n {
			return errNoTargets
		}
		return tr(t)
	}
}

var errNoTargets = vegeta.ErrNoTargets

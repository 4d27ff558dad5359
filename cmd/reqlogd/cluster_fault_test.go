package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
)

// TestMain runs the test binary as reqlogd itself when asReqlogdEnv says so
// (kill_test.go), and otherwise the tests, with the shared cluster.
func TestMain(m *testing.M) {
	if os.Getenv(asReqlogdEnv) == "1" {
		os.Exit(run(nil, os.LookupEnv, os.Stdout, os.Stderr))
	}
	os.Exit(elastictest.Main(m))
}

// refusalBound is the longest any request may take while the cluster loses a
// node, counted from the kill for one sent before it: a client's timeout under
// this load. A write whose shard has no
// primary is refused by Elasticsearch after elastic.DefaultShardWait (500 ms),
// which a request may meet twice; the rest is room for a busy machine (at a
// load of 20 on two cores a 200 sent before the kill took 3.007 s). It bounds
// a hang, not speed.
const refusalBound = 5 * time.Second

// Load while the node dies: a modest rate, as a deployment's steady traffic.
const (
	faultRate         = 20 // POSTs per second
	faultItems        = 10 // messages per POST
	faultWarmUp       = 3 * time.Second
	faultAfterResumed = 3 * time.Second // load kept up after writes resumed
	faultResumeWithin = time.Minute     // writes must be acknowledged again within this of the kill
)

// outcome is what one POST got.
type outcome struct {
	start, end time.Time
	status     int
	retryAfter string
	ids        []string
	err        error
}

// TestClusterLosingThePrimaryUnderLoad runs reqlogd on the three-node cluster,
// loads it at faultRate POSTs of faultItems messages per second, SIGKILLs the
// node holding the primary of the day's index and does not restart it. Every
// request, from the first (sent as soon as reqlogd serves, on the cluster's
// first writes), must be answered 200, or 503 with Retry-After, within refusalBound;
// writes must be acknowledged again after the replica's promotion; and every
// acknowledged message must be read back through reqlogd from the survivors.
func TestClusterLosingThePrimaryUnderLoad(t *testing.T) {
	cluster := elastictest.SharedCluster(t)
	const key = "rk_cluster_fault_test"
	cfg := defaultConfig()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Store = storeElasticsearch
	cfg.Elasticsearch.Addresses = cluster.URLs()
	cfg.Elasticsearch.IndexPrefix = "fault"
	cfg.App.VisibilityDelay = time.Second // the store's read lag
	cfg.HTTP.RateLimit = 0
	apiKey, err := app.NewAPIKey("acme", "live", key)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keyring.Keys = []app.APIKey{apiKey}
	graph, err := options(cfg, zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel)))
	if err != nil {
		t.Fatal(err)
	}
	var server *httpapi.Server
	// Start-up waits for the day's replicas and warms the cluster's indexing
	// path (elastic.Config.WarmUp) within half of what is left of this.
	svc := fxtest.New(t, graph, fx.StartTimeout(3*time.Minute), fx.Populate(&server))
	svc.RequireStart()
	defer svc.RequireStop()
	base := "http://" + server.Addr().String()

	// One created_at for every message: one daily index, whatever the hour.
	createdAt := time.Now().UTC().Truncate(time.Second)
	index := "fault-messages-" + createdAt.Format("2006.01.02")
	client := &http.Client{Timeout: 10 * refusalBound} // long enough to see a request overrun the bound
	survivorOf := func(killed string) string {
		for _, name := range cluster.Names() {
			if name != killed {
				return cluster.URL(name)
			}
		}
		return ""
	}

	var (
		mu       sync.Mutex
		outcomes []outcome
		inFlight sync.WaitGroup
	)
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	// The load starts as soon as reqlogd serves, as a deployment's traffic
	// does: its first requests meet the cluster just started, and are held
	// to the same bound as the others.
	loadStarted := time.Now()
	go func() { // open model: a POST every 1/faultRate s, whether or not the last was answered
		defer close(loadDone)
		tick := time.NewTicker(time.Second / faultRate)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			inFlight.Add(1)
			go func() {
				defer inFlight.Done()
				o := post(client, base, key, createdAt)
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}()
		}
	}()
	stopLoad := func() {
		close(stop)
		<-loadDone
		inFlight.Wait()
	}
	ackedAfter := func(since time.Time) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		first, ok := time.Time{}, false
		for _, o := range outcomes {
			if o.status == http.StatusOK && o.start.After(since) && (!ok || o.end.Before(first)) {
				first, ok = o.end, true
			}
		}
		return first, ok
	}

	if !waitUntil(faultWarmUp+refusalBound, func() bool {
		_, ok := ackedAfter(loadStarted)
		return ok && time.Since(loadStarted) >= faultWarmUp
	}) {
		stopLoad()
		t.Fatalf("no POST acknowledged in the %s before the kill", faultWarmUp)
	}
	var health struct{ Status string }
	getJSON(t, client, survivorOf("")+"/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", &health)
	if health.Status != "green" {
		stopLoad()
		t.Fatalf("%s is %s before the kill, want green (a replica on another node)", index, health.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	primary, err := cluster.PrimaryNode(ctx, index)
	if err != nil {
		stopLoad()
		t.Fatal(err)
	}
	killedAt := time.Now()
	if err := cluster.Kill(primary); err != nil {
		stopLoad()
		t.Fatal(err)
	}
	t.Logf("killed %s, which held the primary of %s", primary, index)
	resumed := waitUntil(faultResumeWithin, func() bool {
		at, ok := ackedAfter(killedAt)
		return ok && time.Since(at) >= faultAfterResumed
	})
	stopLoad()

	firstAck, ok := ackedAfter(killedAt)
	if !resumed || !ok {
		t.Errorf("no POST sent after the kill was acknowledged within %s", faultResumeWithin)
	} else {
		t.Logf("first acknowledged write %s after the kill", firstAck.Sub(killedAt).Round(time.Millisecond))
	}
	// when says when a POST was sent: after the load started, and relative to the kill.
	when := func(o outcome) string {
		return fmt.Sprintf("%s into the load (%s from the kill)", o.start.Sub(loadStarted).Round(time.Millisecond),
			o.start.Sub(killedAt).Round(time.Millisecond))
	}
	var acked []string
	counts := map[int]int{}
	var slowest time.Duration
	for _, o := range outcomes {
		took := o.end.Sub(o.start)
		slowest = max(slowest, took)
		counts[o.status]++
		switch {
		case o.err != nil:
			t.Errorf("POST sent %s: %v after %s", when(o), o.err, took)
		case o.status == http.StatusOK:
			acked = append(acked, o.ids...)
		case o.status == http.StatusServiceUnavailable && o.retryAfter == "":
			t.Errorf("503 without Retry-After, sent %s", when(o))
		case o.status != http.StatusServiceUnavailable:
			t.Errorf("POST sent %s: status %d", when(o), o.status)
		}
		// Bounded from the kill for a POST already under way: its time before
		// the kill is the busy machine's, not the node's loss.
		if sinceKill := o.end.Sub(later(o.start, killedAt)); sinceKill > refusalBound {
			t.Errorf("POST sent %s took %s (status %d), %s of it after the kill, more than %s", when(o), took.Round(time.Millisecond), o.status,
				sinceKill.Round(time.Millisecond), refusalBound)
		}
	}
	t.Logf("%d POSTs: %v by status; slowest %s; %d messages acknowledged", len(outcomes), counts,
		slowest.Round(time.Millisecond), len(acked))
	slices.SortFunc(outcomes, func(a, b outcome) int { return cmp.Compare(b.end.Sub(b.start), a.end.Sub(a.start)) })
	for _, o := range outcomes[:min(3, len(outcomes))] {
		t.Logf("slow: sent %s, status %d in %s", when(o), o.status, o.end.Sub(o.start).Round(time.Millisecond))
	}

	// Every acknowledged message, read back through reqlogd from the survivors.
	var missing []string
	if !waitUntil(time.Minute, func() bool {
		found := exportedIDs(t, client, base, key)
		missing = missing[:0]
		for _, id := range acked {
			if !found[id] {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0
	}) {
		t.Errorf("%d of %d acknowledged messages not read back from the survivors, e.g. %v",
			len(missing), len(acked), missing[:min(5, len(missing))])
	}
	getJSON(t, client, base+"/readyz", nil)
}

// post submits faultItems messages created at createdAt.
func post(client *http.Client, base, key string, createdAt time.Time) outcome {
	var b strings.Builder
	b.WriteByte('[')
	for i := range faultItems {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"shop","created_at":%d,"method":"POST","path":"/orders/%d",`+
			`"request":{"body":"{\"sku\":%d}"},"response":{"status_code":201}}`, createdAt.Unix(), i, i)
	}
	b.WriteByte(']')
	o := outcome{start: time.Now()}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(b.String()))
	if err != nil {
		o.err, o.end = err, time.Now()
		return o
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		o.err, o.end = err, time.Now()
		return o
	}
	defer resp.Body.Close()
	var reply struct {
		Data []struct{ ID string }
	}
	body, err := io.ReadAll(resp.Body)
	o.end = time.Now()
	o.status, o.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	if err != nil {
		o.err = err
		return o
	}
	if o.status == http.StatusOK {
		if err := json.Unmarshal(body, &reply); err != nil || len(reply.Data) != faultItems {
			o.err = fmt.Errorf("200 with %d identities (%v): %s", len(reply.Data), err, body)
		}
		for _, d := range reply.Data {
			o.ids = append(o.ids, d.ID)
		}
	}
	return o
}

// exportedIDs reads every id reqlogd exports for key.
func exportedIDs(t *testing.T, client *http.Client, base, key string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/messages/export", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("export: status %d: %s", resp.StatusCode, b)
	}
	found := map[string]bool{}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var m struct{ ID string }
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("export line %q: %v", lines.Text(), err)
		}
		found[m.ID] = true
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("export: %v", err)
	}
	return found
}

// getJSON GETs url, fails t unless it answers 200, and decodes into out if not nil.
func getJSON(t *testing.T, client *http.Client, url string, out any) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
}

// waitUntil polls cond every 100 ms until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

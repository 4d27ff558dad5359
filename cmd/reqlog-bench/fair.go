package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The fair workload asks whether one account's heavy reads slow another
// account down. The other account (-key) submits and lists at -rate, first
// alone (quiet), then while the heavy account (-heavy-key) keeps
// -heavy-connections statistics calls with q=-heavy-q in flight (contended).
// Both phases run for -duration in the same run, so the report compares the
// other account's latencies under contention with its own quiet ones: the
// simplest thing doing the same job, on the same machine at the same time.
//
// Seed the heavy account with the messages its statistics walk (reqlog-bench
// -key <heavy> -n 1000000 seed) and the other with a few, so its list has a
// page to return.

// fairOptions are the flags of the fair workload.
type fairOptions struct {
	heavyKey         string
	heavyConnections int
	heavyQ           string
}

// heavyCall is one statistics call of the heavy account.
type heavyCall struct {
	status int // 0: no answer
	took   time.Duration
}

// fair runs the fair workload.
func (s *server) fair(ctx context.Context, title string, o options, stdout io.Writer) error {
	if o.fair.heavyKey == "" || o.fair.heavyKey == s.key {
		return errors.New("fair: -heavy-key must name another account's key than -key")
	}
	heavy := &server{base: s.base, key: o.fair.heavyKey, client: &http.Client{}}
	statsURL := "/v1/stats?q=" + url.QueryEscape(o.fair.heavyQ)
	if _, err := s.list(ctx, "limit=1"); err != nil {
		return fmt.Errorf("fair: the other account cannot list: %w", err)
	}
	bodies := newGenerator(o.seed).pool(o.poolSize, o.items, time.Now())
	victim := func() vegeta.Targeter {
		return mixedTargets(s.ingestTargets(bodies), s.getTargets(s.base+"/v1/messages?limit=20"), 0.5, o.seed)
	}

	quiet := attack(title+" (quiet)", o.load, o.items, victim(), false, nil)
	quiet.print(stdout)

	heavyCtx, stopHeavy := context.WithCancel(ctx)
	var mu sync.Mutex
	var calls []heavyCall
	var wg sync.WaitGroup
	for range o.fair.heavyConnections {
		wg.Go(func() {
			for heavyCtx.Err() == nil {
				began := time.Now()
				status, _, err := heavy.get(heavyCtx, statsURL)
				if err != nil && heavyCtx.Err() != nil {
					return // cut short by the end of the run: not a call that finished
				}
				mu.Lock()
				calls = append(calls, heavyCall{status: status, took: time.Since(began)})
				mu.Unlock()
			}
		})
	}
	cpu := startCPU(o.pid)
	contended := attack(title+" (contended)", o.load, o.items, victim(), false, nil)
	serverCPU := cpu.per(1)
	stopHeavy()
	wg.Wait()
	contended.print(stdout)

	fmt.Fprintf(stdout, "\n== heavy account: %d connections asking GET %s\n", o.fair.heavyConnections, statsURL)
	printHeavyCalls(stdout, calls)
	if serverCPU > 0 {
		fmt.Fprintf(stdout, "cpu: the server (pid %d) used %.2f cores while contended\n", o.pid,
			serverCPU.Seconds()/o.load.duration.Seconds())
	}
	fmt.Fprintln(stdout, "\n== the other account, contended against quiet")
	for _, kind := range []string{kindIngest, kindFirst} {
		q, c := quiet.byKind[kind], contended.byKind[kind]
		if q == nil || c == nil {
			continue
		}
		fmt.Fprintf(stdout, "%-10s p50 %s -> %s, p99 %s -> %s (%.1f times), max %s -> %s, ok %.1f%% -> %.1f%%\n", kind,
			ms(q.Latencies.P50), ms(c.Latencies.P50), ms(q.Latencies.P99), ms(c.Latencies.P99),
			float64(c.Latencies.P99)/float64(max(q.Latencies.P99, 1)), ms(q.Latencies.Max), ms(c.Latencies.Max),
			100*q.Success, 100*c.Success)
	}
	return nil
}

// printHeavyCalls summarises the heavy account's finished calls.
func printHeavyCalls(w io.Writer, calls []heavyCall) {
	if len(calls) == 0 {
		fmt.Fprintln(w, "no call finished during the run (each was still walking when it ended)")
		return
	}
	statuses := map[int]int{}
	took := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		statuses[c.status]++
		took = append(took, c.took)
	}
	slices.Sort(took)
	fmt.Fprintf(w, "%d calls finished: statuses %v, took min %s, median %s, max %s\n", len(calls), statuses,
		ms(took[0]), ms(took[len(took)/2]), ms(took[len(took)-1]))
}

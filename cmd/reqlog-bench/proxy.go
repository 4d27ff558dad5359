package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/reqlog/reqlog/adapters/proxy"
)

// The proxy workload measures reqlogd's capturing proxy (-url, started with
// REQLOG_PROXY_UPSTREAM=http://<-upstream>) against a plain
// httputil.ReverseProxy in front of the same upstream, in one run: the tool
// serves the upstream on -upstream and the plain proxy in child processes,
// then alternates the two, -rounds times each, first as fast as -connections
// allow (throughput), then at -proxy-rate (latency). With -pid, each proxy's CPU
// per request is printed: the capturing one's includes storing what it records.

// Child modes of the proxy workload; their addresses come from the environment.
const (
	childUpstream   = "serve-upstream"
	childPlainProxy = "serve-plain-proxy"
	// envChildAddr is where a child listens (default: a free loopback port);
	// envUpstream is the plain proxy's upstream.
	envChildAddr = "REQLOG_BENCH_CHILD_ADDR"
	envUpstream  = "REQLOG_BENCH_UPSTREAM"
)

// upstreamReply is the upstream's answer: about a kilobyte of JSON, a typical
// API reply.
var upstreamReply = []byte(`{"items":[` + strings.TrimSuffix(strings.Repeat(`{"id":"itm_8f7d2c","name":"a widget of some kind","price":1299,"currency":"EUR"},`, 12), ",") + `]}`)

// upstreamHandler reads the request body and answers upstreamReply.
func upstreamHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(upstreamReply)
	})
}

// plainProxyHandler is the baseline: httputil.ReverseProxy with the capturing
// proxy's transport (the same idle connections per host), recording nothing.
func plainProxyHandler() http.Handler {
	target, err := url.Parse(os.Getenv(envUpstream))
	if err != nil || target.Host == "" {
		panic(fmt.Sprintf("%s=%q is not a URL", envUpstream, os.Getenv(envUpstream)))
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport: proxy.NewTransport(),
	}
}

// proxyTargets are GETs of item pages and, one in five, a POST of half a
// kilobyte of JSON: a pool drawn from seed before the run, taken in turn.
func proxyTargets(base string, seed uint64) vegeta.Targeter {
	rng := rand.New(rand.NewPCG(seed, seed))
	post := []byte(`{"sku":"itm_8f7d2c","quantity":2,"note":"` + strings.Repeat("x", 440) + `"}`)
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"reqlog-bench"}}
	pool := make([]vegeta.Target, 2000)
	for i := range pool {
		pool[i] = vegeta.Target{Method: http.MethodGet, Header: header,
			URL: fmt.Sprintf("%s/items/%d?page=%d", base, rng.IntN(100_000), rng.IntN(10))}
		if rng.IntN(5) == 0 {
			pool[i] = vegeta.Target{Method: http.MethodPost, URL: base + "/orders", Body: post, Header: header}
		}
	}
	rr := &roundRobin[vegeta.Target]{items: pool}
	return func(t *vegeta.Target) error {
		*t = rr.take()
		return nil
	}
}

type proxyOptions struct {
	upstream string // host:port
	rounds   int
	rate     int
}

func proxyBench(ctx context.Context, o options, stdout io.Writer) error {
	capturing, err := newServer(o.url, "")
	if err != nil {
		return err
	}
	if host, _, err := net.SplitHostPort(o.proxy.upstream); err != nil || !isLoopback(host) {
		return fmt.Errorf("-upstream %q must be a loopback host:port", o.proxy.upstream)
	}
	upstream, err := startChildWith(childUpstream, envChildAddr+"="+o.proxy.upstream)
	if err != nil {
		return err
	}
	defer func() { _ = upstream.stop() }()
	plain, err := startChildWith(childPlainProxy, envUpstream+"="+upstream.url)
	if err != nil {
		return err
	}
	defer func() { _ = plain.stop() }()
	if err := waitAnswers(ctx, capturing.base+"/items/0"); err != nil {
		return fmt.Errorf("the capturing proxy at %s: %w (is reqlogd running with REQLOG_PROXY_UPSTREAM=%s?)", capturing.base, err, upstream.url)
	}
	fmt.Fprintf(stdout, "upstream %s (pid %d); plain httputil.ReverseProxy %s (pid %d); capturing proxy %s (pid %d)\n",
		upstream.url, upstream.pid(), plain.url, plain.pid(), capturing.base, o.pid)

	type side struct {
		name string
		base string
		pid  int
	}
	sides := []side{{"plain", plain.url, plain.pid()}, {"capturing", capturing.base, o.pid}}
	closed, open := o.load, o.load
	closed.rate = 0
	open.rate = o.proxy.rate
	for _, phase := range []struct {
		name string
		load load
	}{{"throughput", closed}, {"latency", open}} {
		var reports [2][]*report
		var cpu [2][]time.Duration
		for round := range o.proxy.rounds {
			for i, s := range sides {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				meter := startCPU(s.pid)
				rep := attack(fmt.Sprintf("%s %s round %d", phase.name, s.name, round+1), phase.load, 1,
					proxyTargets(s.base, o.seed+uint64(round)), false, nil)
				relabel(rep)
				rep.print(stdout)
				reports[i] = append(reports[i], rep)
				if per := meter.per(float64(rep.all.Requests)); per > 0 {
					cpu[i] = append(cpu[i], per)
					fmt.Fprintf(stdout, "cpu: the %s proxy spent %.1fµs per request (user and system, /proc/<pid>/stat)\n",
						s.name, float64(per)/float64(time.Microsecond))
				}
			}
		}
		printProxyComparison(stdout, phase.name, reports, cpu)
	}
	return nil
}

// relabel names the report's rows by the proxy workload's requests rather than
// the API's (kindOf takes every POST for a submission).
func relabel(rep *report) {
	byKind := map[string]*vegeta.Metrics{}
	for kind, name := range map[string]string{kindIngest: "POST /orders", kindOther: "GET /items/{id}"} {
		if m := rep.byKind[kind]; m != nil {
			byKind[name] = m
		}
	}
	rep.byKind = byKind
}

// printProxyComparison sums a phase up: per round, the capturing proxy's
// throughput as a share of the plain one's and the p99 it adds, then the
// medians over the rounds.
func printProxyComparison(w io.Writer, phase string, reports [2][]*report, cpu [2][]time.Duration) {
	fmt.Fprintf(w, "\n== %s: capturing vs plain, round by round\n", phase)
	var ratios, added []float64
	for r := range reports[0] {
		plain, capturing := reports[0][r].all, reports[1][r].all
		ratio := capturing.Throughput / plain.Throughput
		extra := float64(capturing.Latencies.P99-plain.Latencies.P99) / float64(time.Millisecond)
		ratios, added = append(ratios, ratio), append(added, extra)
		fmt.Fprintf(w, "round %d: throughput %.0f/s vs %.0f/s = %.2f; p99 %s vs %s (%+.2fms); ok %.1f%% vs %.1f%%\n", r+1,
			capturing.Throughput, plain.Throughput, ratio, ms(capturing.Latencies.P99), ms(plain.Latencies.P99), extra,
			capturing.Success*100, plain.Success*100)
	}
	fmt.Fprintf(w, "median: throughput ratio %.2f, p99 added %+.2fms\n", median(ratios), median(added))
	if len(cpu[0]) > 0 && len(cpu[0]) == len(cpu[1]) {
		var plainCPU, capturingCPU []float64
		for r := range cpu[0] {
			plainCPU = append(plainCPU, float64(cpu[0][r].Microseconds()))
			capturingCPU = append(capturingCPU, float64(cpu[1][r].Microseconds()))
		}
		fmt.Fprintf(w, "median CPU per request: capturing %.0fµs, plain %.0fµs (ratio %.2f)\n",
			median(capturingCPU), median(plainCPU), median(capturingCPU)/median(plainCPU))
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// waitAnswers polls url until it answers at all, for up to ten seconds.
func waitAnswers(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

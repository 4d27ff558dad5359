package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// The proxy workload serves the upstream where the capturing proxy expects it,
// runs both proxies in turn and compares them.
func TestProxyWorkloadComparesBothProxies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := ln.Addr().String()
	ln.Close() // the tool's child listens there

	ingest := app.NewIngester(memory.New(), domain.DefaultPolicy(), app.SystemClock{})
	capturing, err := proxy.NewServer(proxy.Config{Addr: "127.0.0.1:0", Upstream: "http://" + upstream, Name: "bench"},
		app.LocalSubmitter{Ingester: ingest, Principal: domain.Principal{Scope: domain.Scope{Account: "bench", Domain: domain.DomainTest}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := capturing.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer capturing.Stop(context.Background())

	var stderr, out strings.Builder
	o, mode, err := parse([]string{"-url", "http://" + capturing.Addr().String(), "-upstream", upstream,
		"-duration", "300ms", "-connections", "2", "-rounds", "1", "-proxy-rate", "50", "proxy"}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if err := execute(context.Background(), mode, o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"throughput capturing round 1", "latency plain round 1", "median: throughput ratio"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if s := capturing.Stats(); s.Captured == 0 {
		t.Errorf("the capturing proxy recorded nothing: %+v", s)
	}

}

package proxy_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// rig is a capturing proxy server in front of an upstream, storing into a
// real memory store through the ingest use case, as reqlogd does.
type rig struct {
	proxyURL  string
	server    *proxy.Server
	reader    *app.Reader
	principal domain.Principal
}

func newRig(t *testing.T, upstream string, cfg proxy.Config) *rig {
	t.Helper()
	return newRigWithRules(t, upstream, cfg, "")
}

// newRigWithRules is newRig with the account's rule set the JSON document
// ruleSet (from a rules file); "" for none.
func newRigWithRules(t *testing.T, upstream string, cfg proxy.Config, ruleSet string) *rig {
	t.Helper()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	store := memory.New()
	ports := app.IngestPorts{Store: store, Lookup: store, Clock: app.SystemClock{}}
	if ruleSet != "" {
		rs, err := rules.Parse([]byte(ruleSet))
		if err != nil {
			t.Fatal(err)
		}
		rulesCfg := app.DefaultRulesConfig()
		rulesCfg.File = map[string]rules.RuleSet{"acme": rs}
		if ports.Rules, err = app.NewRuleBook(nil, rulesCfg, nil, zaptest.NewLogger(t)); err != nil {
			t.Fatal(err)
		}
	}
	ingest, err := app.NewIngesterWith(ports, policy, app.DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	principal := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}
	cfg.Addr, cfg.Upstream = "127.0.0.1:0", upstream
	if cfg.Name == "" {
		cfg.Name = "shop"
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := proxy.NewServer(cfg, app.LocalSubmitter{Ingester: ingest, Principal: principal}, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("stop the proxy: %v", err)
		}
	})
	return &rig{proxyURL: "http://" + s.Addr().String(), server: s,
		reader: app.NewReader(store, policy, app.SystemClock{}), principal: principal}
}

// stored polls the store until it holds n messages, and returns them oldest
// first.
func (r *rig) stored(t *testing.T, n int) []domain.Message {
	t.Helper()
	var msgs []domain.Message
	conformance.WaitFor(t, "stored messages", func() bool {
		page, err := r.reader.List(context.Background(), r.principal, domain.Query{Limit: domain.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		msgs = page.Messages
		return len(msgs) >= n
	})
	if len(msgs) != n {
		t.Fatalf("stored %d messages, want %d", len(msgs), n)
	}
	slices.Reverse(msgs)
	return msgs
}

// stuckSubmitter never stores anything until it is closed or the call's
// context ends.
type stuckSubmitter chan struct{}

func (s stuckSubmitter) SubmitExchanges(ctx context.Context, _ []domain.Exchange) ([]domain.Identity, error) {
	select {
	case <-s:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL, err)
	}
	return resp, string(body)
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// rawStatus sends raw bytes as a request and returns the reply's status.
func rawStatus(t *testing.T, addr, raw string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func tail(s string) string { return s[max(0, len(s)-80):] }

package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// FaultHarness is what RunFaultTests needs of a store adapter: a store on a real
// server that the test may stop and start again.
type FaultHarness struct {
	// NewStore returns a fresh store connected to the harness's server and
	// registers its own cleanup, as for the other suites.
	NewStore StoreMaker
	// StopServer stops the server as a crash would: connections cut, the port
	// refusing new ones, its data kept. It returns once the server is down.
	StopServer func(t *testing.T)
	// StartServer starts the server again on the same address and data. It
	// returns once the server accepts connections; the store may take a while
	// longer to notice.
	StartServer func(t *testing.T)
	// Serve wires the service on the store, as for RunAPITests.
	Serve ServeFunc
	// RequestTimeout is every client's timeout: the longest the service may
	// take to answer any request, while the server is down too. Set it above the
	// store's own bound on a call to an unreachable server (server selection or
	// request timeout, retries included). Zero means DefaultFaultRequestTimeout.
	RequestTimeout time.Duration
	// RecoveryTimeout bounds how long after StartServer returns the service may
	// take to be ready and to accept submissions again, with no restart of its
	// own. Zero means DefaultFaultRecoveryTimeout.
	RecoveryTimeout time.Duration
}

// Defaults of FaultHarness.
const (
	DefaultFaultRequestTimeout  = 15 * time.Second
	DefaultFaultRecoveryTimeout = time.Minute
)

// The load of the fault scenario: a few clients, each submitting one message at
// a time at a pace that stays under the service's default per-key rate limit.
const (
	faultClients   = 4
	faultPace      = 50 * time.Millisecond
	faultWarmUp    = 3 // acknowledged submissions per client before the outage
	faultRecovered = 3 // acknowledged submissions per client after the restart
	faultPoll      = 20 * time.Millisecond
)

// RunFaultTests stops the store's server while clients submit over HTTP, then
// starts it again, and checks what the contract promises through it: every
// acknowledged message is readable afterwards, every request is answered within
// RequestTimeout (503 with Retry-After while the store is down), /readyz goes red
// and green again, and the same service accepts submissions once the server is
// back.
func RunFaultTests(t *testing.T, h FaultHarness) {
	if h.RequestTimeout <= 0 {
		h.RequestTimeout = DefaultFaultRequestTimeout
	}
	if h.RecoveryTimeout <= 0 {
		h.RecoveryTimeout = DefaultFaultRecoveryTimeout
	}
	t.Run("StoreOutageUnderLoad", func(t *testing.T) { faultTestOutageUnderLoad(t, h) })
}

// faultOutcome is one submission and what became of it.
type faultOutcome struct {
	client       int
	began, ended time.Time
	reply        apiReply // its status is 0 when err is set
	err          error    // no answer within the client's timeout, or a broken connection
}

func (o faultOutcome) acknowledged() bool { return o.err == nil && o.reply.status == http.StatusOK }

// faultRun is what the clients and the operator share.
type faultRun struct {
	e    *apiEnv
	h    FaultHarness
	stop chan struct{} // closed by the operator: clients finish

	mu       sync.Mutex
	outcomes []faultOutcome
}

func (r *faultRun) add(o faultOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, o)
}

// everyClient reports whether each client has at least n outcomes that pass keep.
func (r *faultRun) everyClient(n int, keep func(faultOutcome) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := make([]int, faultClients)
	for _, o := range r.outcomes {
		if keep(o) {
			counts[o.client]++
		}
	}
	for _, c := range counts {
		if c < n {
			return false
		}
	}
	return true
}

func faultTestOutageUnderLoad(t *testing.T, h FaultHarness) {
	e := apiSuite{newStore: h.NewStore, serve: h.Serve}.start(t)
	// Every request of this test, readiness probes and lookups too.
	e.srv.Client().Timeout = h.RequestTimeout
	t.Logf("every request must be answered within %s; the service must recover within %s of the restart", h.RequestTimeout, h.RecoveryTimeout)
	e.awaitReadiness(t, http.StatusOK, h.RequestTimeout)

	// The clients run on goroutines of their own and only record; everything is
	// checked here, on the test's goroutine.
	run := &faultRun{e: e, h: h, stop: make(chan struct{})}
	var clients sync.WaitGroup
	for i := range faultClients {
		clients.Go(func() { run.client(i) })
	}
	stopClients := sync.OnceFunc(func() {
		close(run.stop)
		clients.Wait()
	})
	defer stopClients()
	downFrom, downUntil := run.operate(t)
	stopClients()

	acknowledged := map[string]apiIdentity{}
	refused := 0
	for _, o := range run.outcomes {
		when := fmt.Sprintf("client %d's submission from %s to %s", o.client, o.began.Format(time.StampMilli), o.ended.Format(time.StampMilli))
		if o.err != nil {
			t.Errorf("%s got no answer (the limit is %s): %v", when, h.RequestTimeout, o.err)
			continue
		}
		switch o.reply.status {
		case http.StatusOK:
			o.reply.wantOK(t, apiIngestedText, "data")
			identity := apiCheckIdentity(t, o.reply, "data", true)
			acknowledged[identity.ID] = identity
			if o.began.After(downFrom) && o.ended.Before(downUntil) {
				t.Errorf("%s was acknowledged while the server was down (%s to %s): nothing can have been stored",
					when, downFrom.Format(time.StampMilli), downUntil.Format(time.StampMilli))
			}
		case http.StatusServiceUnavailable:
			o.reply.wantError(t, http.StatusServiceUnavailable)
			apiWantRetryAfter(t, o.reply)
			refused++
		default:
			t.Errorf("%s got %s; want 200, or 503 while the store is down", when, o.reply)
		}
	}
	t.Logf("%d submissions: %d acknowledged, %d refused with 503", len(run.outcomes), len(acknowledged), refused)
	e.awaitReadable(t, acknowledged)
}

// client submits one message at a time until the operator stops it.
func (r *faultRun) client(client int) {
	tick := time.NewTicker(faultPace)
	defer tick.Stop()
	name := fmt.Sprintf("fault-client-%d", client)
	for range r.maxPerClient() {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		o := faultOutcome{client: client, began: time.Now()}
		o.reply, o.err = r.e.submit(apiItem(r.e.clock.Now().Add(-time.Second), map[string]any{"name": name}))
		o.ended = time.Now()
		r.add(o)
	}
}

// maxPerClient bounds a client's submissions: as many as fit, at its pace, in
// the longest the operator may wait in all.
func (r *faultRun) maxPerClient() int {
	budget := 3*r.h.RecoveryTimeout + 5*r.h.RequestTimeout
	return int(budget/faultPace) + 1
}

// submit posts item with apiAcmeLive and the client's timeout. Unlike do it
// reports a failed exchange rather than failing the test, so that it can run
// off the test's goroutine.
func (e *apiEnv) submit(item any) (apiReply, error) {
	body, err := json.Marshal(item)
	if err != nil {
		return apiReply{}, err
	}
	req, err := http.NewRequest(http.MethodPost, e.base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return apiReply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+apiAcmeLive.Key)
	req.Header.Set("Content-Type", apiJSON)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return apiReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return apiReply{}, err
	}
	reply := apiReply{request: "POST /v1/messages", status: resp.StatusCode, header: resp.Header, raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if reply.jsonErr = dec.Decode(&reply.body); reply.jsonErr != nil {
		reply.body = nil
	}
	return reply, nil
}

// operate stops the server once every client has been acknowledged, waits for
// /readyz to fail and for every client to be answered from the outage, starts
// the server again and waits until /readyz and every client succeed again. It
// returns when the server was down: from StopServer's return to StartServer's
// call.
func (r *faultRun) operate(t *testing.T) (downFrom, downUntil time.Time) {
	r.await(t, "every client acknowledged before the outage", r.h.RecoveryTimeout, func() bool {
		return r.everyClient(faultWarmUp, faultOutcome.acknowledged)
	})

	r.h.StopServer(t)
	downFrom = time.Now()
	restarted := false
	defer func() {
		if !restarted { // the test failed: leave the server running for the cleanups
			r.h.StartServer(t)
		}
	}()
	r.e.awaitReadiness(t, http.StatusServiceUnavailable, 2*r.h.RequestTimeout)
	r.await(t, "every client answered for a submission sent during the outage", 3*r.h.RequestTimeout, func() bool {
		return r.everyClient(1, func(o faultOutcome) bool { return o.err == nil && o.began.After(downFrom) })
	})

	downUntil = time.Now()
	restarted = true
	r.h.StartServer(t)
	r.e.awaitReadiness(t, http.StatusOK, r.h.RecoveryTimeout)
	r.await(t, "every client acknowledged again after the restart", r.h.RecoveryTimeout, func() bool {
		return r.everyClient(faultRecovered, func(o faultOutcome) bool { return o.acknowledged() && o.began.After(downUntil) })
	})
	return downFrom, downUntil
}

// await polls cond until it holds, failing after within.
func (r *faultRun) await(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(faultPoll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %s", what, within)
		}
		<-tick.C
	}
}

// awaitReadiness polls /readyz until it answers want, failing after within.
func (e *apiEnv) awaitReadiness(t *testing.T, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(faultPoll)
	defer tick.Stop()
	for {
		r := e.do(t, http.MethodGet, "/readyz", nil)
		switch r.status {
		case http.StatusOK:
			r.wantOK(t, "")
		case http.StatusServiceUnavailable:
			r.wantError(t, http.StatusServiceUnavailable)
			apiWantRetryAfter(t, r)
		default:
			t.Fatalf("/readyz answered %s; want 200 or 503", r)
		}
		if r.status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still answers %d after %s, want %d", r.status, within, want)
		}
		<-tick.C
	}
}

// awaitReadable looks up every acknowledged message by id until each is found
// with its reference, past the visibility delay.
func (e *apiEnv) awaitReadable(t *testing.T, acknowledged map[string]apiIdentity) {
	t.Helper()
	e.clock.Advance(e.cfg.Policy.VisibilityDelay)
	within := e.store.ReadLag() + 30*time.Second
	deadline := time.Now().Add(within)
	// Paced under the default per-key rate limit.
	tick := time.NewTicker(faultPoll)
	defer tick.Stop()
	pending := len(acknowledged)
	for id, want := range acknowledged {
		for {
			r := e.get(t, apiAcmeLive, "/v1/messages/"+url.PathEscape(id))
			<-tick.C
			if r.status == http.StatusOK {
				r.wantOK(t, "", "data", "rules")
				if got := apiMust[string](t, r.body, "data.reference"); got != want.Reference {
					t.Errorf("acknowledged message %s has reference %s, want %s", id, got, want.Reference)
				}
				break
			}
			if r.status != http.StatusNotFound && r.status != http.StatusServiceUnavailable && r.status != http.StatusTooManyRequests {
				t.Fatalf("looking up an acknowledged message: %s", r)
			}
			if time.Now().After(deadline) {
				t.Fatalf("acknowledged message %s is not readable %s after the load (%d of %d not confirmed): %s",
					id, within, pending, len(acknowledged), r)
			}
		}
		pending--
	}
}

// Package webhooktest helps tests receive webhooks: a local receiver that
// records every request and answers as told, and the Python standardwebhooks
// package (PyPI), an implementation of Standard Webhooks independent of
// reqlog's, to verify signatures with.
//
// The Python verifier is provisioned like the other backends of the tests: a
// virtual environment under $REQLOG_CACHE_DIR (default os.UserCacheDir()/reqlog)
// with standardwebhooks installed from PyPI on first use. Without python3, or
// without network on first use, the test is skipped naming what is missing,
// or fails when REQLOG_REQUIRE_BACKENDS=1.
package webhooktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Request is one request the receiver got.
type Request struct {
	Header http.Header
	Body   []byte
	At     time.Time // real time of arrival
}

// Reply is how the receiver answers one request.
type Reply struct {
	Status     int
	RetryAfter string
	Body       string
	// Hold waits this long before answering (a slow receiver).
	Hold time.Duration
}

// Receiver is a local HTTP server that records webhooks.
type Receiver struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	requests []Request
	replies  []Reply // answered in turn; the last one repeats
	arrived  chan struct{}
}

// NewReceiver serves on a loopback port until the test ends. It answers 204
// unless told otherwise (Answer).
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{arrived: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/hooks/reqlog"
	t.Cleanup(r.srv.Close)
	return r
}

// Answer sets the replies of the next requests, in turn; the last one
// answers every request after them.
func (r *Receiver) Answer(replies ...Reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies = replies
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Header: req.Header.Clone(), Body: body, At: time.Now()})
	reply := Reply{Status: http.StatusNoContent}
	if len(r.replies) > 0 {
		reply = r.replies[0]
		if len(r.replies) > 1 {
			r.replies = r.replies[1:]
		}
	}
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	time.Sleep(reply.Hold) // a receiver that takes its time, not a wait of the test's
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	w.WriteHeader(reply.Status)
	_, _ = io.WriteString(w, reply.Body)
}

// Requests returns what the receiver got so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// WaitFor polls until the receiver has n requests or timeout passes, and
// returns them.
func (r *Receiver) WaitFor(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if got := r.Requests(); len(got) >= n {
			return got
		}
		select {
		case <-r.arrived:
		case <-deadline.C:
			got := r.Requests()
			t.Fatalf("the receiver got %d requests within %s, want %d", len(got), timeout, n)
			return got
		}
	}
}

// standardWebhooksVersion is the PyPI release the verifier runs.
const standardWebhooksVersion = "1.1.0"

// verifyScript verifies each case of a JSON list read on stdin with the
// standardwebhooks package and prints one line per case: "ok" or the error.
const verifyScript = `
import json, sys
from standardwebhooks.webhooks import Webhook
for case in json.load(sys.stdin):
    try:
        Webhook(case["secret"]).verify(case["body"], case["headers"])
        print("ok")
    except Exception as e:
        print(type(e).__name__ + ": " + str(e).replace("\n", " "))
`

// PythonVerifier runs the standardwebhooks package of PyPI.
type PythonVerifier struct{ python string }

var provision struct {
	once   sync.Once
	python string
	err    error
}

// NewPythonVerifier provisions the verifier once per test binary, or skips t
// (fails it with REQLOG_REQUIRE_BACKENDS=1) when it cannot.
func NewPythonVerifier(t testing.TB) *PythonVerifier {
	t.Helper()
	provision.once.Do(func() { provision.python, provision.err = provisionPython() })
	if provision.err != nil {
		msg := "the Standard Webhooks verifier of PyPI (python3 -m venv, pip install standardwebhooks==" +
			standardWebhooksVersion + ") is not available: " + provision.err.Error()
		if os.Getenv("REQLOG_REQUIRE_BACKENDS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (REQLOG_REQUIRE_BACKENDS=1 makes this a failure)")
	}
	return &PythonVerifier{python: provision.python}
}

func provisionPython() (string, error) {
	cache := os.Getenv("REQLOG_CACHE_DIR")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(dir, "reqlog")
	}
	venv := filepath.Join(cache, "standardwebhooks-"+standardWebhooksVersion)
	python := filepath.Join(venv, "bin", "python")
	if exec.Command(python, "-c", "import standardwebhooks").Run() == nil {
		return python, nil
	}
	if _, err := exec.LookPath("python3"); err != nil {
		return "", fmt.Errorf("python3 is not on PATH")
	}
	_ = os.RemoveAll(venv)
	for _, cmd := range [][]string{
		{"python3", "-m", "venv", venv},
		{filepath.Join(venv, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check", "standardwebhooks==" + standardWebhooksVersion},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v: %s", cmd[0], err, bytes.TrimSpace(out))
		}
	}
	return python, nil
}

// Case is one delivery to verify with secret.
type Case struct {
	Secret string
	Header http.Header
	Body   []byte
}

// Verify returns, for each case, nil when standardwebhooks accepts it and the
// error it raised otherwise. Its timestamp must be within 5 minutes of now.
func (v *PythonVerifier) Verify(t testing.TB, cases []Case) []error {
	t.Helper()
	type pyCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	in := make([]pyCase, len(cases))
	for i, c := range cases {
		headers := map[string]string{}
		for name := range c.Header {
			headers[name] = c.Header.Get(name)
		}
		in[i] = pyCase{Secret: c.Secret, Headers: headers, Body: string(c.Body)}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(v.python, "-c", verifyScript)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the Python verifier: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != len(cases) {
		t.Fatalf("the Python verifier answered %d lines for %d cases: %s", len(lines), len(cases), out)
	}
	errs := make([]error, len(cases))
	for i, line := range lines {
		if string(line) != "ok" {
			errs[i] = fmt.Errorf("standardwebhooks (Python) refused case %d: %s", i, line)
		}
	}
	return errs
}

// Seconds is a webhook-timestamp value of t.
func Seconds(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

package capture_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// fakeClock moves only when a test advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// pauser lets a test move the clock while a handler waits: pause blocks the
// handler until the test has advanced the clock and resumed it.
type pauser struct{ reached, resume chan struct{} }

func newPauser() *pauser { return &pauser{reached: make(chan struct{}), resume: make(chan struct{})} }

func (p *pauser) pause() {
	p.reached <- struct{}{}
	<-p.resume
}

// drive waits for each pause of the handler, advances clock by the next step and
// resumes the handler.
func (p *pauser) drive(t *testing.T, clock *fakeClock, steps []time.Duration) {
	t.Helper()
	for i, step := range steps {
		select {
		case <-p.reached:
		case <-time.After(10 * time.Second):
			t.Fatalf("the handler never reached pause %d", i+1)
		}
		clock.Advance(step)
		p.resume <- struct{}{}
	}
}

// durationCases: each handler pauses len(steps) times; the clock moves by each
// step during the matching pause, and the exchange must carry want.
var durationCases = []struct {
	name    string
	handler func(w http.ResponseWriter, pause func())
	steps   []time.Duration
	want    time.Duration
	unknown bool
}{
	{
		name:    "nothing written: until the handler returns",
		handler: func(_ http.ResponseWriter, pause func()) { pause() },
		steps:   []time.Duration{25 * time.Millisecond},
		want:    25 * time.Millisecond,
	},
	{
		name: "status only: until WriteHeader, not the work after it",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			w.WriteHeader(http.StatusNoContent)
			pause()
		},
		steps: []time.Duration{15 * time.Millisecond, 40 * time.Millisecond},
		want:  15 * time.Millisecond,
	},
	{
		name: "several chunks: until the last one",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			_, _ = io.WriteString(w, "first ")
			pause()
			_, _ = io.WriteString(w, "second")
			pause()
		},
		steps: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		want:  30 * time.Millisecond,
	},
	{
		name: "a flush after the last write ends the reply",
		handler: func(w http.ResponseWriter, pause func()) {
			_, _ = io.WriteString(w, "event: tick\n\n")
			pause()
			w.(http.Flusher).Flush()
			pause()
		},
		steps: []time.Duration{12 * time.Millisecond, 50 * time.Millisecond},
		want:  12 * time.Millisecond,
	},
	{
		name: "io.Copy through ReadFrom",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			_, _ = io.Copy(w, onlyReader{strings.NewReader(strings.Repeat("x", 5000))})
			pause()
		},
		steps: []time.Duration{7 * time.Millisecond, 9 * time.Millisecond},
		want:  7 * time.Millisecond,
	},
	{
		name: "early hints are not the reply: net/http answers when the handler returns",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			w.WriteHeader(http.StatusEarlyHints)
			pause()
		},
		steps: []time.Duration{5 * time.Millisecond, 8 * time.Millisecond},
		want:  13 * time.Millisecond,
	},
	{
		name: "hijacked: until the connection is handed over",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			defer conn.Close()
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
			_ = buf.Flush()
			pause()
		},
		steps: []time.Duration{6 * time.Millisecond, 30 * time.Millisecond},
		want:  6 * time.Millisecond,
	},
	{
		name: "a stream longer than a day: unknown, the exchange still sent",
		handler: func(w http.ResponseWriter, pause func()) {
			pause()
			_, _ = io.WriteString(w, "data: 1\n\n")
			pause()
			_, _ = io.WriteString(w, "data: 2\n\n")
		},
		steps:   []time.Duration{time.Millisecond, domain.MaxDuration},
		unknown: true,
	},
}

func TestDurationIsMeasuredToTheLastWrite(t *testing.T) {
	for _, tc := range durationCases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now().UTC().Truncate(time.Microsecond)
			clock := &fakeClock{now: start}
			p := newPauser()
			sub := &fakeSubmitter{}
			rec, srv := startRecorder(t, sub, capture.Options{Clock: clock}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				tc.handler(w, p.pause)
			}))
			replied := make(chan error, 1)
			go func() {
				resp, err := http.Get(srv.URL)
				if err == nil {
					_, err = io.Copy(io.Discard, bufio.NewReader(resp.Body))
					resp.Body.Close()
				}
				replied <- err
			}()
			p.drive(t, clock, tc.steps)
			select {
			case err := <-replied:
				if err != nil {
					t.Fatalf("request: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no reply")
			}
			conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
			if s := closeRecorder(t, rec); s.Submitted != 1 {
				t.Fatalf("stats %+v, want the exchange submitted", s)
			}
			e := sub.exchanges()[0]
			if !e.CreatedAt.Equal(start) {
				t.Errorf("created_at %v, want the clock's %v at the handler's start", e.CreatedAt, start)
			}
			if tc.unknown {
				if e.HasDuration {
					t.Errorf("duration %v, want it unknown", e.Duration)
				}
				return
			}
			if !e.HasDuration || e.Duration != tc.want {
				t.Errorf("duration %v (known %t), want %v", e.Duration, e.HasDuration, tc.want)
			}
		})
	}
}

// readAdvancing hands out its parts one Read at a time, moving the clock on
// by step before each part after the first. It is no io.WriterTo, so io.Copy
// goes through the writer's ReadFrom.
type readAdvancing struct {
	parts []string
	clock *fakeClock
	step  time.Duration
	reads int
}

func (r *readAdvancing) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	if r.reads > 0 {
		r.clock.Advance(r.step)
	}
	r.reads++
	n := copy(p, r.parts[0])
	r.parts = r.parts[1:]
	return n, nil
}

// A reply copied through ReadFrom (io.Copy to the ResponseWriter) minds the
// time limit as Write does: what arrives after it is not kept, and the body is
// marked as cut by time.
func TestAReplyReadFromPastTheTimeLimitIsCut(t *testing.T) {
	clock := &fakeClock{now: time.Now().UTC()}
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{Clock: clock, MaxBodyReadTime: time.Minute}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		src := &readAdvancing{parts: []string{"within the limit;", "past-the-limit"}, clock: clock, step: 2 * time.Minute}
		if _, err := io.Copy(w, src); err != nil {
			t.Errorf("copy: %v", err)
		}
	}))
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "within the limit;past-the-limit" {
		t.Fatalf("the client got %q, want the whole reply", body)
	}
	conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
	closeRecorder(t, rec)
	got := sub.exchanges()[0].Response.Body
	if strings.Contains(got, "past-the-limit") || !strings.Contains(got, "the body took longer than 1m0s") {
		t.Errorf("recorded %q, want the part past the limit left out and the body marked cut by time", got)
	}
}

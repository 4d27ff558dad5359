package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
)

// childEnv makes the test binary run the program itself.
const childEnv = "EMBEDDED_EXAMPLE_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const key = "rk_shop_live_example_test_key"

// shop is the program running in a process of its own.
type shop struct {
	cmd   *exec.Cmd
	url   string
	lines chan string // its log, line by line; closed when it exits
}

var listening = regexp.MustCompile(`shop on (http://\S+),`)

func startShop(t *testing.T, dir string) *shop {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "LOGS_DIR="+dir, "LOGS_KEY="+key, "ADDR=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &shop{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		defer close(s.lines)
		for scanner := bufio.NewScanner(stderr); scanner.Scan(); {
			s.lines <- scanner.Text()
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for line := range s.lines {
		if m := listening.FindStringSubmatch(line); m != nil {
			s.url = m[1]
			return s
		}
	}
	t.Fatal("the shop exited before it listened")
	return nil
}

// stop sends SIGTERM and returns the capture counts the shop logs at exit.
func (s *shop) stop(t *testing.T) (captured, stored, dropped, failed int) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`captured (\d+) exchanges: (\d+) stored, (\d+) dropped, (\d+) failed`)
	var last string
	for line := range s.lines {
		last = line
		if m := counts.FindStringSubmatch(line); m != nil {
			n := make([]int, 4)
			for i := range n {
				n[i], _ = strconv.Atoi(m[i+1])
			}
			captured, stored, dropped, failed = n[0], n[1], n[2], n[3]
		}
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("the shop's exit after SIGTERM: %v (last line %q)", err, last)
	}
	return captured, stored, dropped, failed
}

// The shop receives SIGTERM while clients keep it busy: every exchange it
// captured is stored or counted as dropped or failed, and what it stored is
// there after a restart, each answered request among it unless some were
// dropped.
func TestSIGTERMUnderLoadLosesNoCapture(t *testing.T) {
	dir := t.TempDir()
	first := startShop(t, dir)

	var (
		mu       sync.Mutex
		answered = map[string]bool{} // paths of the requests answered 200
		count    atomic.Int64
		workers  sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 8 {
		workers.Go(func() {
			for i := 0; ; i++ {
				path := fmt.Sprintf("/orders/ord_%d_%d", w, i)
				resp, err := client.Get(first.url + path)
				if err != nil {
					return // the shop has stopped listening
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					answered[path] = true
					mu.Unlock()
					count.Add(1)
				}
			}
		})
	}
	poll(t, "300 requests answered", func() bool { return count.Load() >= 300 })
	captured, stored, dropped, failed := first.stop(t) // while the workers go on
	workers.Wait()
	t.Logf("%d requests answered; %d captured: %d stored, %d dropped, %d failed", len(answered), captured, stored, dropped, failed)
	if captured != stored+dropped+failed || captured < len(answered) || stored == 0 || failed != 0 {
		t.Fatalf("captured %d, stored %d, dropped %d, failed %d for %d requests answered: "+
			"want every capture stored or counted, none failed", captured, stored, dropped, failed, len(answered))
	}

	second := startShop(t, dir)
	reader, err := httpclient.New(second.url+"/logs", key)
	if err != nil {
		t.Fatal(err)
	}
	var kept map[string]bool
	poll(t, "the stored exchanges readable after the restart", func() bool { // the visibility delay is 5 s
		kept = map[string]bool{}
		for m, err := range reader.All(t.Context(), httpclient.ListOptions{Name: "shop"}) {
			if err != nil {
				t.Fatal(err)
			}
			kept[m.Path] = true
		}
		return len(kept) >= stored
	})
	if len(kept) != stored {
		t.Errorf("after the restart %d exchanges can be read, %d were stored", len(kept), stored)
	}
	if dropped == 0 {
		for path := range answered {
			if !kept[path] {
				t.Errorf("GET %s was answered and not stored", path)
			}
		}
	}
	second.stop(t)
}

// poll checks cond every 10 ms until it holds, for at most 30 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// The README shows this program as it is.
func TestREADMEShowsTheProgram(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Embed it\n")
	_, block, _ := strings.Cut(section, "```go\n")
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(program) {
		t.Error("README.md's \"Embed it\" does not show adapters/embedded/example/main.go as it is: copy the file into it")
	}
}

// An embedder's binary links no fx nor dig: the fx modules live in packages
// of their own (appfx, <name>fx), which this program does not import.
func TestLinksNoFx(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on the PATH: go list -deps cannot run")
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.Lines(string(out)) {
		if strings.HasPrefix(pkg, "go.uber.org/fx") || strings.HasPrefix(pkg, "go.uber.org/dig") {
			t.Errorf("the program links %s", strings.TrimSpace(pkg))
		}
	}
}

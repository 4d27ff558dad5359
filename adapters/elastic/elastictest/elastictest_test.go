package elastictest

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

var client = &http.Client{Timeout: 30 * time.Second}

// do sends a request and decodes a JSON answer into out (if non-nil),
// failing t unless the status is want.
func do(t *testing.T, method, url, body string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d: %s", method, url, resp.Status, want, b)
	}
	// go-elasticsearch refuses responses without this header.
	if got := resp.Header.Get("X-Elastic-Product"); got != "Elasticsearch" {
		t.Errorf("%s %s: X-Elastic-Product = %q", method, url, got)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
}

// nodeVersion reads the version from the nodes info API: the integ-test-zip
// has no GET / (rest-root module), so version.number from / is unavailable.
func nodeVersion(t *testing.T, base string) string {
	t.Helper()
	var info struct {
		Nodes map[string]struct{ Version string } `json:"nodes"`
	}
	do(t, "GET", base+"/_nodes/_local?filter_path=nodes.*.version", "", 200, &info)
	for _, n := range info.Nodes {
		return n.Version
	}
	t.Fatal("no node in /_nodes/_local")
	return ""
}

// indexAndGet writes a document with refresh, then reads it back by id and by search.
func indexAndGet(t *testing.T, base, index, id, msg string) {
	t.Helper()
	do(t, "PUT", base+"/"+index+"/_doc/"+id+"?refresh=true", fmt.Sprintf(`{"msg":%q}`, msg), 201, nil)
	checkDoc(t, base, index, id, msg)
	var sr struct {
		Hits struct {
			Total struct{ Value int } `json:"total"`
		} `json:"hits"`
	}
	do(t, "POST", base+"/"+index+"/_search", fmt.Sprintf(`{"query":{"match":{"msg":%q}}}`, msg), 200, &sr)
	if sr.Hits.Total.Value != 1 {
		t.Errorf("search for %q: %d hits, want 1", msg, sr.Hits.Total.Value)
	}
}

func checkDoc(t *testing.T, base, index, id, msg string) {
	t.Helper()
	var doc struct {
		Found  bool `json:"found"`
		Source struct {
			Msg string `json:"msg"`
		} `json:"_source"`
	}
	do(t, "GET", base+"/"+index+"/_doc/"+id, "", 200, &doc)
	if !doc.Found || doc.Source.Msg != msg {
		t.Errorf("GET %s/_doc/%s = %+v, want msg %q", index, id, doc, msg)
	}
}

func TestSharedCluster(t *testing.T) {
	base := URL(t)
	if v := nodeVersion(t, base); !strings.HasPrefix(v, "8.") {
		t.Errorf("version %q, want 8.x", v)
	}
	if os.Getenv(envURL) == "" && os.Geteuid() == 0 && shared.node.mode != runUserNS {
		t.Errorf("as root the node runs %s, want %s", shared.node.mode, runUserNS)
	}
	indexAndGet(t, base, "reqlog-elastictest", "1", "hello shared")
	do(t, "DELETE", base+"/reqlog-elastictest", "", 200, nil)
	if again := URL(t); again != base {
		t.Errorf("second URL = %q, want %q", again, base)
	}
}

func TestNodeStopStart(t *testing.T) {
	n := NewNode(t)
	base := n.URL()
	indexAndGet(t, base, "restart", "1", "survives restart")

	began := time.Now()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %s", time.Since(began).Round(time.Millisecond))
	if resp, err := client.Get(base + "/_cluster/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("node still answers after Stop: %s", resp.Status)
	}
	if err := n.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	began = time.Now()
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %s", time.Since(began).Round(time.Millisecond))
	if n.URL() != base {
		t.Errorf("URL after restart = %s, want %s", n.URL(), base)
	}
	checkDoc(t, base, "restart", "1", "survives restart")
	if err := n.Start(); err == nil {
		t.Error("Start on a running node succeeded")
	}
	// Cleanup by wildcard relies on action.destructive_requires_name=false.
	do(t, "DELETE", base+"/resta*", "", 200, nil)
}

// TestNodeAsNobody covers the fallback for root without user namespaces.
func TestNodeAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root switches to nobody")
	}
	simulateNoUserNS = true
	t.Cleanup(func() { simulateNoUserNS = false })
	n := NewNode(t)
	if n.mode != runNobody {
		t.Fatalf("mode %s, want %s", n.mode, runNobody)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.proc.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t65534\t") {
		t.Errorf("launcher does not run as nobody:\n%s", status)
	}
	indexAndGet(t, n.URL(), "nobody", "1", "as nobody")
}

// TestNoOrphanWhenKilled SIGKILLs a test binary that runs a node (so no
// cleanup runs) and checks that the node's processes go away anyway.
func TestNoOrphanWhenKilled(t *testing.T) {
	if os.Getenv("REQLOG_ELASTICTEST_HELPER") == "1" {
		n := NewNode(t)
		fmt.Printf("NODE %d %s\n", n.proc.cmd.Process.Pid, n.dir)
		io.Copy(io.Discard, os.Stdin) // until killed
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("node provisioning is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoOrphanWhenKilled$", "-test.v")
	cmd.Env = append(os.Environ(), "REQLOG_ELASTICTEST_HELPER=1", envURL+"=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	var pgid int
	var dir string
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(startTimeout + time.Minute)
	for pgid == 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("helper exited without starting a node (skipped?)")
			}
			if strings.HasPrefix(line, "--- SKIP") {
				t.Skip("helper skipped: no node can be provisioned")
			}
			fmt.Sscanf(line, "NODE %d %s", &pgid, &dir)
		case <-timeout:
			t.Fatal("helper did not report a node")
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // the killed helper cannot
	if !groupAlive(pgid) {
		t.Fatalf("process group %d not running before the kill", pgid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	began := time.Now()
	if !waitFor(time.Minute, closedChan, func() bool { return !groupAlive(pgid) }) {
		t.Fatalf("process group %d still running a minute after its test binary was killed", pgid)
	}
	t.Logf("node processes gone %s after the kill", time.Since(began).Round(time.Millisecond))
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// recorder captures failOrSkip's verdict.
type recorder struct {
	testing.TB
	skip, fatal string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skipf(f string, a ...any)  { r.skip = fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...) }

func TestMissingJavaSkips(t *testing.T) {
	t.Setenv(envURL, "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("ES_JAVA_HOME", "")
	t.Setenv("JAVA_HOME", "")
	t.Setenv(envRequire, "")
	_, _, explicit, err := provision()
	if err == nil || !strings.Contains(err.Error(), "java not found on PATH") {
		t.Fatalf("provision error = %v, want java not found on PATH", err)
	}
	r := &recorder{}
	failOrSkip(r, err, explicit)
	if !strings.Contains(r.skip, "java not found on PATH; install Java 17") || !strings.Contains(r.skip, envURL) || r.fatal != "" {
		t.Errorf("skip %q fatal %q", r.skip, r.fatal)
	}

	t.Setenv(envRequire, "1")
	r = &recorder{}
	failOrSkip(r, err, explicit)
	if !strings.Contains(r.fatal, "java not found") || r.skip != "" {
		t.Errorf("with %s=1: skip %q fatal %q", envRequire, r.skip, r.fatal)
	}
}

func TestMissingMavenNamesIt(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.m2 copy
	t.Setenv("PATH", t.TempDir())
	_, err := ensureDist(t.TempDir(), "8.19.21")
	if err == nil || !strings.Contains(err.Error(), "mvn is not on PATH") {
		t.Fatalf("ensureDist error = %v, want mvn is not on PATH", err)
	}
}

func TestUnreachableExplicitURLFails(t *testing.T) {
	old := externalTimeout
	externalTimeout = time.Second
	t.Cleanup(func() { externalTimeout = old })
	t.Setenv(envURL, "http://127.0.0.1:1/")
	t.Setenv(envRequire, "")
	_, _, explicit, err := provision()
	if err == nil || !explicit {
		t.Fatalf("provision = %v, explicit %v; want an error for the explicit URL", err, explicit)
	}
	r := &recorder{}
	failOrSkip(r, err, explicit)
	if !strings.Contains(r.fatal, envURL) || r.skip != "" {
		t.Errorf("skip %q fatal %q, want a failure naming %s", r.skip, r.fatal, envURL)
	}
}

func TestUnzipKeepsModesAndRejectsEscapes(t *testing.T) {
	write := func(t *testing.T, files map[string]os.FileMode) string {
		p := filepath.Join(t.TempDir(), "a.zip")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		for name, mode := range files {
			h := &zip.FileHeader{Name: name, Method: zip.Deflate}
			h.SetMode(mode)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, "#!/bin/sh\n")
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}

	dst := t.TempDir()
	if err := unzip(write(t, map[string]os.FileMode{"d/bin/run": 0o755, "d/conf": 0o644}), dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"d/bin/run": 0o755, "d/conf": 0o644} {
		st, err := os.Stat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", name, got, want)
		}
	}
	if err := unzip(write(t, map[string]os.FileMode{"../evil": 0o644}), t.TempDir()); err == nil {
		t.Error("unzip accepted ../evil")
	}
}

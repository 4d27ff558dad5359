package elastictest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// How the node process runs. Elasticsearch refuses to start as root (8.19
// has no escape hatch: es.insecure.allow.root is gone), so as root we must
// look like another user to it.
type runMode int

const (
	//lint:ignore U1000 the zero mode, named for the reader
	runDirect runMode = iota // not root: run as ourselves
	// Root: a new user namespace in which we appear as uid 1000. Files stay
	// accessed as root outside, so the cache under /root needs no chown/copy.
	runUserNS
	// Root where user namespaces are unavailable (e.g. a container's seccomp
	// profile): setuid to nobody, on a hard-linked copy of the distribution
	// (the cache under /root is usually not traversable by nobody).
	runNobody
)

func (m runMode) String() string {
	return [...]string{"as current user", "in a user namespace", "as nobody"}[m]
}

const (
	nsUID    = 1000  // our uid inside the user namespace
	nobodyID = 65534 // nobody / nogroup
)

// simulateNoUserNS makes starting in a user namespace fail, as under a
// seccomp profile that forbids it; for this package's tests.
var simulateNoUserNS bool

// Node is one Elasticsearch process with its own data directory and ports,
// made by NewNode.
// Stop and Start restart it on the same ports and data, for fault tests.
type Node struct {
	mu            sync.Mutex
	dir           string // private root: config/, data/, logs/, tmp/, output.log
	home          string // extracted distribution (ES_HOME)
	javaHome      string
	mode          runMode
	httpPort      int // 0 until the first start picked a free one
	transportPort int
	heap          string   // -Xms and -Xmx of the JVM, e.g. "512m"
	member        *member  // nil for a single-node cluster
	proc          *process // nil while stopped
}

// member is what a node of a Cluster knows of it: its own name, the cluster's
// name, and every node's name and transport address, for discovery.
type member struct {
	name, cluster string
	names, seeds  []string
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done
}

// NewNode starts a dedicated node for t, for tests that stop, restart or
// otherwise disturb it (each costs ~10s and 512 MiB heap). It is stopped and
// its data removed when t ends. Like URL, it skips t, or fails it when
// REQLOG_REQUIRE_BACKENDS=1, if no node can be provisioned. It does not need Main.
func NewNode(t testing.TB) *Node {
	t.Helper()
	began := time.Now()
	n, err := startNode()
	if err != nil {
		failOrSkip(t, err, false)
		return nil
	}
	t.Logf("elastictest: node at %s ready in %s (%s)", n.URL(), time.Since(began).Round(time.Millisecond), n.mode)
	t.Cleanup(func() {
		if err := n.close(); err != nil {
			t.Errorf("elastictest: %v", err)
		}
	})
	return n
}

// URL returns the node's base URL, e.g. "http://127.0.0.1:41234". It stays
// the same across Stop and Start.
func (n *Node) URL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.urlLocked()
}

func (n *Node) urlLocked() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.httpPort))
}

// StartNode starts a node outside any test, for cmd/reqlog-devstore; httpPort 0
// picks a free port. Close stops it and removes its data.
func StartNode(httpPort int) (*Node, error) { return startNodeOn(httpPort) }

// Close stops the node and removes its data directory.
func (n *Node) Close() error { return n.close() }

func startNode() (*Node, error) { return startNodeOn(0) }

func startNodeOn(httpPort int) (*Node, error) {
	n, err := newNode(httpPort, 0, defaultHeap, nil)
	if err != nil {
		return nil, err
	}
	if err := n.Start(); err != nil {
		os.RemoveAll(n.dir)
		return nil, err
	}
	return n, nil
}

// defaultHeap is the heap of a single node.
const defaultHeap = "512m"

// newNode prepares a stopped node: the distribution fetched, its directory made.
func newNode(httpPort, transportPort int, heap string, m *member) (*Node, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	jh, err := javaHome()
	if err != nil {
		return nil, err
	}
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	home, err := ensureDist(cache, version())
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reqlog-es-")
	if err != nil {
		return nil, err
	}
	n := &Node{dir: dir, home: home, javaHome: jh, httpPort: httpPort, transportPort: transportPort, heap: heap, member: m}
	if os.Geteuid() == 0 {
		n.mode = runUserNS
	}
	if err := n.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return n, nil
}

func (n *Node) prepare() error {
	for _, d := range []string{"data", "logs", "tmp"} {
		if err := os.Mkdir(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	// A private config dir: Elasticsearch writes its keystore there, and the
	// cached distribution is shared by concurrent test binaries.
	if err := copyTree(filepath.Join(n.home, "config"), filepath.Join(n.dir, "config"), false); err != nil {
		return err
	}
	return nil
}

func (n *Node) useNobody() error {
	n.mode = runNobody
	dist := filepath.Join(n.dir, "dist")
	if _, err := os.Stat(dist); err != nil {
		if err := copyTree(n.home, dist, true); err != nil {
			return err
		}
	}
	// Not dist: chowning a hard link would chown the cached file.
	if err := os.Chown(n.dir, nobodyID, nobodyID); err != nil {
		return err
	}
	for _, d := range []string{"config", "data", "logs", "tmp"} {
		err := filepath.WalkDir(filepath.Join(n.dir, d), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, nobodyID, nobodyID)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) distDir() string {
	if n.mode == runNobody {
		return filepath.Join(n.dir, "dist")
	}
	return n.home
}

func (n *Node) outputPath() string { return filepath.Join(n.dir, "output.log") }

// Start starts the stopped node on its ports and data directory and waits
// until the cluster is at least yellow.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil {
		return errors.New("elastictest: node already running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := n.launchLocked(); err != nil {
		return err
	}
	return n.awaitLocked(ctx, "")
}

// launchLocked starts the node's process without waiting for it.
func (n *Node) launchLocked() error {
	for _, f := range []string{"http.ports", "transport.ports"} {
		os.Remove(filepath.Join(n.dir, "logs", f))
	}
	p, err := n.spawn()
	if err != nil && n.mode == runUserNS {
		if nerr := n.useNobody(); nerr != nil {
			return fmt.Errorf("starting Elasticsearch in a user namespace: %v; preparing to run as nobody: %v", err, nerr)
		}
		p, err = n.spawn()
	}
	if err != nil {
		return fmt.Errorf("starting Elasticsearch %s: %w", n.mode, err)
	}
	n.proc = p
	return nil
}

// awaitLocked waits until the launched node answers and its cluster's health
// is at least yellow, with extra conditions of _cluster/health (e.g.
// "&wait_for_nodes=3"); on failure it stops the node and returns its output.
func (n *Node) awaitLocked(ctx context.Context, extra string) error {
	p := n.proc
	if err := n.waitReady(ctx, p, extra); err != nil {
		n.stopLocked()
		status := ""
		select {
		case <-p.done:
			if p.err != nil {
				status = " (" + p.err.Error() + ")"
			}
		default:
		}
		//lint:ignore ST1005 the message starts with a name
		return fmt.Errorf("Elasticsearch %s in %s did not become ready: %v%s\n--- tail of %s ---\n%s",
			version(), n.distDir(), err, status, n.outputPath(), fileTail(n.outputPath(), 6000))
	}
	return nil
}

func (n *Node) spawn() (*process, error) {
	out, err := os.OpenFile(n.outputPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	fmt.Fprintf(out, "=== elastictest: starting %s at %s ===\n", n.mode, time.Now().Format(time.RFC3339))
	if n.mode == runUserNS && simulateNoUserNS {
		return nil, &os.SyscallError{Syscall: "clone", Err: syscall.EPERM}
	}

	cmd := exec.Command(filepath.Join(n.distDir(), "bin", "elasticsearch"), n.args()...)
	cmd.Dir = n.dir
	cmd.Env = n.env()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr(n.mode)
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that forked the
		// child exits, so keep this thread until the child is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (n *Node) args() []string {
	var s []string
	if m := n.member; m != nil {
		s = []string{
			"node.name=" + m.name,
			"cluster.name=" + m.cluster,
			"discovery.seed_hosts=" + strings.Join(m.seeds, ","),
			"cluster.initial_master_nodes=" + strings.Join(m.names, ","),
		}
	} else {
		s = []string{"discovery.type=single-node"}
	}
	s = append(s,
		"xpack.security.enabled=false",
		// Loopback only: keeps the node private and bootstrap checks
		// (vm.max_map_count, file descriptors) as warnings.
		"network.host=127.0.0.1",
		// Port 0 on the first start picks free ports without a race;
		// node.portsfile tells us which. Restarts reuse them.
		"http.port="+strconv.Itoa(n.httpPort),
		"transport.port="+strconv.Itoa(n.transportPort),
		"node.portsfile=true",
		"path.data="+filepath.Join(n.dir, "data"),
		"path.logs="+filepath.Join(n.dir, "logs"),
		// A fullish disk must not turn indices read-only mid-test.
		"cluster.routing.allocation.disk.threshold_enabled=false",
		// Lets tests clean up with DELETE /prefix-*.
		"action.destructive_requires_name=false",
	)
	args := make([]string, 0, 2*len(s))
	for _, kv := range s {
		args = append(args, "-E", kv)
	}
	return args
}

func (n *Node) env() []string {
	override := map[string]string{
		"ES_JAVA_HOME": n.javaHome,
		"ES_PATH_CONF": filepath.Join(n.dir, "config"),
		"ES_TMPDIR":    filepath.Join(n.dir, "tmp"),
		"ES_JAVA_OPTS": strings.TrimSpace("-Xms" + n.heap + " -Xmx" + n.heap + " " + os.Getenv("ES_JAVA_OPTS")),
		"HOME":         n.dir,
	}
	drop := map[string]bool{"JAVA_HOME": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true} // the launcher warns about them
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := override[k]; !ok && !drop[k] {
			env = append(env, kv)
		}
	}
	for k, v := range override {
		env = append(env, k+"="+v)
	}
	return env
}

// waitReady learns the ports (first start) and waits for cluster health.
func (n *Node) waitReady(ctx context.Context, p *process, extra string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n.httpPort == 0 || n.transportPort == 0 {
		n.httpPort = readPort(filepath.Join(n.dir, "logs", "http.ports"))
		n.transportPort = readPort(filepath.Join(n.dir, "logs", "transport.ports"))
		if n.httpPort != 0 && n.transportPort != 0 {
			break
		}
		select {
		case <-ctx.Done():
			return errors.New("no ports file before the deadline")
		case <-p.done:
			return errors.New("process exited")
		case <-tick.C:
		}
	}
	return waitHealthy(ctx, n.urlLocked()+"/_cluster/health?wait_for_status=yellow&timeout=1s"+extra, p.done)
}

// readPort parses a ports file ("127.0.0.1:41234" lines); 0 if not there yet.
func readPort(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Fields(string(b)) {
		if _, port, err := net.SplitHostPort(line); err == nil {
			if p, err := strconv.Atoi(port); err == nil && p > 0 {
				return p
			}
		}
	}
	return 0
}

// Stop stops the node gracefully (SIGTERM, then SIGKILL after a deadline)
// and waits until none of its processes is left. Data and ports are kept for
// Start. Stopping a stopped node does nothing.
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked()
}

func (n *Node) stopLocked() error {
	p := n.proc
	if p == nil {
		return nil
	}
	n.proc = nil
	pgid := p.cmd.Process.Pid // Setpgid: the launcher leads the group
	signalGroup(pgid, syscall.SIGTERM)
	if !waitFor(stopTimeout, p.done, func() bool { return !groupAlive(pgid) }) {
		signalGroup(pgid, syscall.SIGKILL)
		if !waitFor(10*time.Second, p.done, func() bool { return !groupAlive(pgid) }) {
			return fmt.Errorf("elastictest: processes of group %d still running after SIGKILL", pgid)
		}
	}
	return nil
}

// waitFor polls until done is closed and cond holds, or d passes.
func waitFor(d time.Duration, done <-chan struct{}, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if cond() {
				return true
			}
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// close stops the node and removes its directory.
func (n *Node) close() error {
	err := n.Stop()
	if rerr := os.RemoveAll(n.dir); err == nil {
		err = rerr
	}
	return err
}

package elastictest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterSize is the number of nodes of a Cluster: the smallest cluster that
// keeps a master and every index's data after losing any one node.
const ClusterSize = 3

// clusterHeap is each cluster node's heap: three of them beside the other
// tests' single node fit a small machine.
const clusterHeap = "384m"

// Cluster is ClusterSize Elasticsearch nodes on loopback forming one cluster,
// each a master-eligible data node with its own ports and data, for tests that
// lose a node. Get the test binary's cluster with SharedCluster.
type Cluster struct {
	name  string
	nodes map[string]*Node // by node name; fixed once started
	names []string         // sorted
}

var sharedCluster struct {
	once    sync.Once
	cluster *Cluster
	err     error
	took    time.Duration
}

// SharedCluster returns the test binary's three-node cluster, started by the
// first call (about 30 s on two cores; each node has a 384 MiB heap) and
// stopped, its data removed, when Main's m.Run returns. It always starts its
// own nodes, even with REQLOG_TEST_ELASTICSEARCH_URL set: its tests kill
// them. A node a test kills stays down for the later tests of the binary.
// Like URL, it skips t, or fails it when REQLOG_REQUIRE_BACKENDS=1, if no
// cluster can be provisioned; the test binary's TestMain must call Main.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	if !shared.active.Load() {
		t.Fatal("elastictest.SharedCluster: the package's TestMain must call elastictest.Main(m)")
		return nil
	}
	first := false
	sharedCluster.once.Do(func() {
		first = true
		began := time.Now()
		sharedCluster.cluster, sharedCluster.err = startCluster()
		sharedCluster.took = time.Since(began)
	})
	if sharedCluster.err != nil {
		failOrSkip(t, sharedCluster.err, false)
		return nil
	}
	if first {
		t.Logf("elastictest: %d-node cluster at %v ready in %s", ClusterSize, sharedCluster.cluster.URLs(),
			sharedCluster.took.Round(time.Millisecond))
	}
	return sharedCluster.cluster
}

// StartCluster starts a cluster outside any test, e.g. to benchmark reqlogd on
// it; Close stops it and removes its data.
func StartCluster() (*Cluster, error) { return startCluster() }

// Close stops every node and removes their data.
func (c *Cluster) Close() error { return c.close() }

// startCluster starts ClusterSize nodes at once and waits until they formed
// one cluster.
func startCluster() (*Cluster, error) {
	ports, err := freePorts(ClusterSize)
	if err != nil {
		return nil, err
	}
	c := &Cluster{name: fmt.Sprintf("reqlog-test-%d", os.Getpid()), nodes: make(map[string]*Node)}
	seeds := make([]string, ClusterSize)
	for i := range ClusterSize {
		c.names = append(c.names, fmt.Sprintf("node-%d", i+1))
		seeds[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
	}
	for i, name := range c.names {
		n, err := newNode(0, ports[i], clusterHeap, &member{name: name, cluster: c.name, names: c.names, seeds: seeds})
		if err != nil {
			c.close()
			return nil, err
		}
		c.nodes[name] = n
	}
	// Three JVMs start on cores a single node has to itself.
	ctx, cancel := context.WithTimeout(context.Background(), ClusterSize*startTimeout)
	defer cancel()
	for _, name := range c.names {
		n := c.nodes[name]
		n.mu.Lock()
		err := n.launchLocked()
		n.mu.Unlock()
		if err != nil {
			c.close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	// Health answers only once a master is elected; the node count makes
	// every node wait until all have joined.
	ready := fmt.Sprintf("&master_timeout=1s&wait_for_nodes=%d", ClusterSize)
	for _, name := range c.names {
		n := c.nodes[name]
		n.mu.Lock()
		err := n.awaitLocked(ctx, ready)
		n.mu.Unlock()
		if err != nil {
			c.close()
			return nil, fmt.Errorf("%s of the cluster: %w", name, err)
		}
	}
	return c, nil
}

// freePorts returns count distinct loopback ports free at the moment: the
// transport ports, which every node must know before any starts. Another
// process could take one before its node binds it; the start then fails.
func freePorts(count int) ([]int, error) {
	var ports []int
	for range count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Names returns the nodes' names, "node-1" to "node-3", killed ones included.
func (c *Cluster) Names() []string { return slices.Clone(c.names) }

// URL returns the base URL of the named node's HTTP endpoint.
func (c *Cluster) URL(name string) string { return c.nodes[name].URL() }

// URLs returns every node's base URL, killed ones included, as a deployer lists
// them (e.g. in REQLOG_ELASTICSEARCH_URL).
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.names))
	for i, name := range c.names {
		urls[i] = c.URL(name)
	}
	return urls
}

// Live returns the names of the nodes not killed.
func (c *Cluster) Live() []string {
	var live []string
	for _, name := range c.names {
		if c.nodes[name].running() {
			live = append(live, name)
		}
	}
	return live
}

func (n *Node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// Kill sends SIGKILL to every process of the named node, as a crash or an
// out-of-memory kill would, and returns once none is left. The node stays
// down: its data directory is kept until the cluster stops.
func (c *Cluster) Kill(name string) error {
	n, ok := c.nodes[name]
	if !ok {
		return fmt.Errorf("elastictest: no node %q in the cluster", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil {
		return fmt.Errorf("elastictest: node %q is not running", name)
	}
	n.proc = nil
	pgid := p.cmd.Process.Pid
	signalGroup(pgid, syscall.SIGKILL)
	if !waitFor(10*time.Second, p.done, func() bool { return !groupAlive(pgid) }) {
		return fmt.Errorf("elastictest: processes of node %q (group %d) still running after SIGKILL", name, pgid)
	}
	return nil
}

// PrimaryNode returns the name of the node holding the primary of shard 0 of
// index, as _cat/shards reports it, asked of a live node; an error if no
// started primary is reported.
func (c *Cluster) PrimaryNode(ctx context.Context, index string) (string, error) {
	live := c.Live()
	if len(live) == 0 {
		return "", errors.New("elastictest: no live node to ask")
	}
	url := c.URL(live[0]) + "/_cat/shards/" + index + "?format=json&h=shard,prirep,state,node"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var shards []struct {
		Shard, Prirep, State, Node string
	}
	if err := json.NewDecoder(resp.Body).Decode(&shards); err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	for _, s := range shards {
		if s.Shard == "0" && s.Prirep == "p" && s.State == "STARTED" {
			return s.Node, nil
		}
	}
	return "", fmt.Errorf("elastictest: no started primary of %s in %+v", index, shards)
}

// close stops every node and removes their data.
func (c *Cluster) close() error {
	var errs []error
	for _, name := range c.names {
		if n := c.nodes[name]; n != nil {
			errs = append(errs, n.close())
		}
	}
	return errors.Join(errs...)
}

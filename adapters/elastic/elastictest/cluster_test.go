package elastictest

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestClusterLosesTheNodeOfAPrimary checks the three-node harness: every node
// sees the others, an index with a replica is green, and after the node holding
// its primary is killed the survivors promote the replica and serve the document.
func TestClusterLosesTheNodeOfAPrimary(t *testing.T) {
	c := SharedCluster(t)
	if got := c.Live(); len(got) != ClusterSize {
		t.Fatalf("live nodes %v, want %d", got, ClusterSize)
	}
	for _, name := range c.Names() {
		var nodes []struct{ Name string }
		do(t, "GET", c.URL(name)+"/_cat/nodes?format=json&h=name", "", 200, &nodes)
		if len(nodes) != ClusterSize {
			t.Fatalf("%s sees nodes %+v, want %d", name, nodes, ClusterSize)
		}
	}
	const index = "reqlog-elastictest-cluster"
	base := c.URL(c.Names()[0])
	do(t, "PUT", base+"/"+index, `{"settings":{"number_of_shards":1,"number_of_replicas":1}}`, 200, nil)
	do(t, "GET", base+"/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "", 200, nil)
	indexAndGet(t, base, index, "1", "on two nodes")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary, err := c.PrimaryNode(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Names(), primary) {
		t.Fatalf("primary on %q, not a node of the cluster %v", primary, c.Names())
	}
	if err := c.Kill(primary); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(primary); err == nil {
		t.Error("killing a killed node succeeded")
	}
	live := c.Live()
	if len(live) != ClusterSize-1 || slices.Contains(live, primary) {
		t.Fatalf("live nodes after killing %s: %v", primary, live)
	}
	survivor := c.URL(live[0])
	do(t, "GET", survivor+"/_cluster/health/"+index+"?wait_for_status=yellow&wait_for_nodes=2&timeout=60s", "", 200, nil)
	promoted, err := c.PrimaryNode(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == primary {
		t.Errorf("primary still reported on the killed node %s", primary)
	}
	for _, name := range live {
		checkDoc(t, c.URL(name), index, "1", "on two nodes")
	}
}

// Command reqlog-devstore runs a throw-away storage backend for trying reqlogd on
// a machine without one: an embedded FerretDB (MongoDB wire protocol, SQLite
// files) or an Elasticsearch 8 node fetched through Maven. It is the same
// provisioning the tests use; not for production.
//
//	go run ./cmd/reqlog-devstore mongodb          # prints the URI to use
//	go run ./cmd/reqlog-devstore elasticsearch    # needs Java 17+ and Maven
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reqlog-devstore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".reqlog-dev", "directory for the backend's data")
	mongoAddr := fs.String("mongodb-addr", "127.0.0.1:27017", "where FerretDB listens (port 0: any free port)")
	esPort := fs.Int("elasticsearch-port", 9200, "HTTP port of the Elasticsearch node on 127.0.0.1 (0: any free port)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reqlog-devstore [flags] mongodb|elasticsearch")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch fs.Arg(0) {
	case "mongodb":
		err = runMongo(ctx, *dir, *mongoAddr, stdout)
	case "elasticsearch":
		err = runElasticsearch(ctx, *esPort, stdout)
	default:
		fs.Usage()
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "reqlog-devstore:", err)
		return 1
	}
	return 0
}

func runMongo(ctx context.Context, dir, addr string, stdout io.Writer) error {
	dir += "/ferretdb"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	srv, err := mongotest.StartServerOn(ctx, dir, addr)
	if err != nil {
		return fmt.Errorf("start FerretDB: %w", err)
	}
	fmt.Fprintf(stdout, "FerretDB (MongoDB wire protocol) is serving; data in %s. Run reqlogd with:\n\n"+
		"    REQLOG_STORE=mongodb REQLOG_MONGODB_URI='%s' REQLOG_GROUP_COMMIT_WRITERS=2 go run ./cmd/reqlogd\n\n"+
		"(SQLite writes one batch at a time: more writers only wait.) Ctrl-C stops it.\n", dir, srv.URI())
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runElasticsearch runs a single node with a throw-away data directory.
func runElasticsearch(ctx context.Context, port int, stdout io.Writer) error {
	fmt.Fprintln(stdout, "Starting Elasticsearch (the first run fetches it through Maven)...")
	node, err := elastictest.StartNode(port)
	if err != nil {
		return fmt.Errorf("start Elasticsearch: %w", err)
	}
	fmt.Fprintf(stdout, "Elasticsearch is serving. Run reqlogd with:\n\n"+
		"    REQLOG_STORE=elasticsearch REQLOG_ELASTICSEARCH_URL=%s go run ./cmd/reqlogd\n\nCtrl-C stops it (its data is removed).\n", node.URL())
	<-ctx.Done()
	return node.Close()
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	mongooptions "go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// The service's own policy: the bare handler and the store baselines decode and
// normalise exactly as reqlogd does with its defaults.
func servicePolicy() domain.Policy { return app.DefaultConfig().Policy() }

// benchScope owns the messages of the store baselines.
var benchScope = domain.Scope{Account: "bench", Domain: domain.DomainTest}

// bareHandler is the ceiling of the in-memory path: it reads the body under the
// service's limit, decodes, validates and normalises it with the service's policy,
// builds the messages a store would get and answers the identities as the API
// does; no authentication, routing, middleware, group commit or store.
func bareHandler(policy domain.Policy, maxBody int64) http.Handler {
	validator := policy.Validator() // as the ingest use case holds one
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer // sized from Content-Length, as the API reads it
		buf.Grow(int(max(r.ContentLength, 0)) + bytes.MinRead)
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
		raw := buf.Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		now := time.Now()
		batch, err := httpapi.ParseSubmissions(validator, raw, now) // as POST /v1/messages does
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type identity struct {
			ID        string `json:"id"`
			Reference string `json:"reference"`
		}
		ids := make([]identity, len(batch.Submissions))
		msgs := make([]domain.Message, len(batch.Submissions))
		for i, s := range batch.Submissions {
			id, err := domain.NewIdentity()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			msgs[i] = policy.NewMessage(benchScope, s, id, now)
			ids[i] = identity{ID: id.ID, Reference: id.Reference}
		}
		runtime.KeepAlive(msgs)
		var data any = ids
		if !batch.Multiple {
			data = ids[0]
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": true,
			"message": "Logs were successfully ingested and should show up shortly", "data": data})
	})
}

// decodeReply is what the decode handler answers every accepted body.
var decodeReply = []byte(`{"status":true,"message":"Logs were successfully ingested and should show up shortly"}` + "\n")

// decodeHandler is the plain-decode anchor: what any JSON API costs. It reads
// the body under the service's limit, json.Unmarshals it into any and answers a
// fixed reply, storing nothing: no validation, normalisation or identities.
func decodeHandler(maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer // read as the bare handler reads
		buf.Grow(int(max(r.ContentLength, 0)) + bytes.MinRead)
		if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		var v any
		if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(decodeReply)
	})
}

// Handlers the tool serves in a child process, by the argument that starts it.
var childHandlers = map[string]func() http.Handler{
	"serve-bare":    func() http.Handler { return bareHandler(servicePolicy(), httpapi.DefaultMaxBodyBytes) },
	"serve-decode":  func() http.Handler { return decodeHandler(httpapi.DefaultMaxBodyBytes) },
	childUpstream:   upstreamHandler,
	childPlainProxy: plainProxyHandler,
}

// serveChild runs handler on a free loopback port (or $REQLOG_BENCH_CHILD_ADDR),
// prints its URL, and serves until its standard input closes (the parent tool
// ended).
func serveChild(handler http.Handler, stdin io.Reader, stdout io.Writer) error {
	addr := os.Getenv(envChildAddr)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		_ = srv.Close()
	}()
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// childProcess is a limit's handler in a child process, so that, like reqlogd,
// it does not share a Go runtime with the load generator.
type childProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

// startChild starts the tool again with the argument mode, one of childHandlers.
func startChild(mode string) (*childProcess, error) { return startChildWith(mode) }

// startChildWith is startChild with env (NAME=value) added to the environment.
func startChildWith(mode string, env ...string) (*childProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, mode)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s: %w", mode, err)
	}
	return &childProcess{cmd: cmd, stdin: stdin, url: strings.TrimSpace(line)}, nil
}

func (c *childProcess) pid() int { return c.cmd.Process.Pid }

func (c *childProcess) stop() error {
	_ = c.stdin.Close()
	return c.cmd.Wait()
}

// baseline is a direct connection to a backend through its store adapter.
type baseline struct {
	name    string
	writer  ports.MessageWriter
	cleanup func(context.Context) error
}

// Names of the baseline's own database and index prefix, so the service's data
// is left alone.
const (
	baselineDatabase    = "reqlog_bench_baseline"
	baselineIndexPrefix = "reqlog-bench-baseline"
)

func openMongoBaseline(ctx context.Context, uri string) (*baseline, error) {
	store, err := mongo.New(ctx, mongo.Config{URI: uri, Database: baselineDatabase})
	if err != nil {
		return nil, err
	}
	return &baseline{name: "mongodb", writer: store, cleanup: func(ctx context.Context) error {
		defer store.Close(ctx)
		client, err := mongodrv.Connect(mongooptions.Client().ApplyURI(uri))
		if err != nil {
			return err
		}
		defer client.Disconnect(ctx)
		return client.Database(baselineDatabase).Drop(ctx)
	}}, nil
}

func openElasticBaseline(ctx context.Context, addr string) (*baseline, error) {
	store, err := elastic.New(ctx, elastic.Config{Addresses: []string{addr}, IndexPrefix: baselineIndexPrefix})
	if err != nil {
		return nil, err
	}
	return &baseline{name: "elasticsearch", writer: store, cleanup: func(ctx context.Context) error {
		defer store.Close(ctx)
		// Everything the baseline wrote has expired ten years from now.
		if _, err := store.PurgeExpired(ctx, time.Now().AddDate(10, 0, 0)); err != nil {
			return err
		}
		client, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{addr}})
		if err != nil {
			return err
		}
		res, err := client.Indices.DeleteIndexTemplate(baselineIndexPrefix+"-messages", client.Indices.DeleteIndexTemplate.WithContext(ctx))
		if err != nil {
			return err
		}
		return res.Body.Close()
	}}, nil
}

// openSQLiteBaseline opens a store on a temporary directory on this
// machine's disk, deleted afterwards.
func openSQLiteBaseline(ctx context.Context) (*baseline, error) {
	dir, err := os.MkdirTemp("", "reqlog-bench-sqlite-")
	if err != nil {
		return nil, err
	}
	store, err := sqlite.New(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return &baseline{name: "sqlite", writer: store, cleanup: func(context.Context) error {
		return errors.Join(store.Close(), os.RemoveAll(dir))
	}}, nil
}

// verifyInMongo checks that every id is stored in the server's MongoDB database,
// reading the stored ids in one scan.
func verifyInMongo(ctx context.Context, uri, database string, ids []string, deadline time.Duration) (verification, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	began := time.Now()
	client, err := mongodrv.Connect(mongooptions.Client().ApplyURI(uri))
	if err != nil {
		return verification{}, err
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	cur, err := client.Database(database).Collection(mongo.DefaultCollection).Find(ctx, bson.D{},
		mongooptions.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return verification{}, fmt.Errorf("verify in %s: %w", database, err)
	}
	stored := map[string]bool{}
	for cur.Next(ctx) {
		var doc struct {
			ID string `bson:"_id"`
		}
		if err := cur.Decode(&doc); err != nil {
			return verification{}, err
		}
		stored[doc.ID] = true
	}
	if err := cur.Err(); err != nil {
		return verification{}, fmt.Errorf("verify in %s: %w", database, err)
	}
	return tally(ids, stored, began), nil
}

// tally counts which ids are in stored.
func tally(ids []string, stored map[string]bool, began time.Time) verification {
	v := verification{acknowledged: len(ids)}
	for _, id := range ids {
		if stored[id] {
			v.found++
		} else if len(v.missing) < 10 {
			v.missing = append(v.missing, id)
		}
	}
	v.took = time.Since(began)
	return v
}

// verifyInElasticsearch checks that every id is stored in the server's daily
// indices, a thousand ids per search (the message id is the document _id).
func verifyInElasticsearch(ctx context.Context, addr, prefix string, ids []string, deadline time.Duration) (verification, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	began := time.Now()
	client, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{addr}})
	if err != nil {
		return verification{}, err
	}
	// A refresh makes every acknowledged write searchable: without it, the writes
	// of the last second or more (a busy node refreshes late) look missing.
	index := prefix + "-messages-*"
	res, err := client.Indices.Refresh(client.Indices.Refresh.WithContext(ctx), client.Indices.Refresh.WithIndex(index))
	if err != nil {
		return verification{}, fmt.Errorf("verify in elasticsearch: refresh: %w", err)
	}
	res.Body.Close()
	if res.IsError() {
		return verification{}, fmt.Errorf("verify in elasticsearch: refresh: %s", res.Status())
	}
	stored := map[string]bool{}
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		query, err := json.Marshal(map[string]any{"size": len(chunk), "_source": false,
			"query": map[string]any{"ids": map[string]any{"values": chunk}}})
		if err != nil {
			return verification{}, err
		}
		res, err := client.Search(client.Search.WithContext(ctx), client.Search.WithIndex(index),
			client.Search.WithBody(strings.NewReader(string(query))))
		if err != nil {
			return verification{}, err
		}
		var reply struct {
			Hits struct {
				Hits []struct {
					ID string `json:"_id"`
				} `json:"hits"`
			} `json:"hits"`
		}
		err = json.NewDecoder(res.Body).Decode(&reply)
		res.Body.Close()
		if err != nil || res.IsError() {
			return verification{}, fmt.Errorf("verify in elasticsearch: %s: %v", res.Status(), err)
		}
		for _, hit := range reply.Hits.Hits {
			stored[hit.ID] = true
		}
	}
	return tally(ids, stored, began), nil
}

// baselineRun is one batch size's result.
type baselineRun struct {
	batch    int
	workers  int
	rate     float64 // messages per second
	failures int64
	cpu      time.Duration // the tool's CPU per message stored (0: unknown)
}

// measureBaseline appends the decoded submissions of bodies, with fresh
// identities, for each batch size and number of goroutines in turn, each for
// duration, and returns every combination's rate.
func measureBaseline(ctx context.Context, b *baseline, bodies [][]byte, batches, workerCounts []int, duration time.Duration) ([]baselineRun, error) {
	policy := servicePolicy()
	var subs []domain.Submission
	for _, raw := range bodies {
		batch, err := httpapi.ParseSubmissions(policy.Validator(), raw, time.Now())
		if err != nil {
			return nil, fmt.Errorf("a generated body does not parse: %w", err)
		}
		subs = append(subs, batch.Submissions...)
	}
	var runs []baselineRun
	for _, size := range batches {
		for _, workers := range workerCounts {
			run, err := appendFor(ctx, b.writer, policy, subs, size, workers, duration)
			if err != nil {
				return nil, err
			}
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// appendFor runs one combination of measureBaseline.
func appendFor(ctx context.Context, w ports.MessageWriter, policy domain.Policy, subs []domain.Submission, size, workers int, duration time.Duration) (baselineRun, error) {
	var stored, failures atomic.Int64
	var next atomic.Uint64
	cpu := startCPU(os.Getpid()) // the store works in this process
	deadline := time.Now().Add(duration)
	began := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			msgs := make([]domain.Message, size)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				now := time.Now()
				for i := range msgs {
					id, err := domain.NewIdentity()
					if err != nil {
						failures.Add(1)
						return
					}
					msgs[i] = policy.NewMessage(benchScope, subs[next.Add(1)%uint64(len(subs))], id, now)
				}
				if err := w.Append(ctx, msgs); err != nil {
					failures.Add(1)
					continue
				}
				stored.Add(int64(size))
			}
		})
	}
	wg.Wait()
	return baselineRun{batch: size, workers: workers, rate: float64(stored.Load()) / time.Since(began).Seconds(),
		failures: failures.Load(), cpu: cpu.per(float64(stored.Load()))}, ctx.Err()
}

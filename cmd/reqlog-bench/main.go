// Command reqlog-bench loads a running reqlog server on this machine and measures
// it against its limits, on vegeta (github.com/tsenart/vegeta) as a library.
//
//	reqlog-bench [flags] ingest|fetch|mixed|seed|soak|search|stats|export|proxy|fair|generate
//
// ingest, fetch and mixed run one workload at -connections (each sends its next
// request when the last one is answered) or at a fixed -rate, and report
// throughput and p50/p90/p99/max latency by request kind and outcome. With -limit
// the same run first measures the workload's ceiling and prints the ratio to it:
// "decode" (a plain net/http handler, in a child process, that json.Unmarshals
// the same bodies into any and answers a fixed reply: what any JSON API costs),
// "bare" (the same in a child process with the service's own parser and
// identities, no store) or "mongodb"/"elasticsearch" (the store adapter
// appending the same messages in large batches from concurrent goroutines, no
// service in between). With -pid, the server's CPU per message is printed
// against each handler's. -verify looks up every acknowledged message
// afterwards; -sample reads the server's memory from its /metrics as it goes.
// seed preloads -n messages in batches, one in -rare carrying a token that
// search then looks for with q (latency, at -rate or -connections, like fetch);
// with -direct elasticsearch it writes them through the store adapter instead
// of the API, for the million the explorer's benchmarks read;
// stats asks for the last 24 hours' statistics the same way; export streams
// GET /v1/messages/export one request at a time for -duration and reports
// messages per second and the server's peak memory. soak runs the mixed load for
// -duration and reports errors and memory over time. proxy compares reqlogd's
// capturing proxy at -url with a plain httputil.ReverseProxy in front of the same
// upstream, both served by the tool (proxy.go). fair measures another
// account's submissions and lists alone, then while -heavy-key keeps
// statistics calls with q in flight (fair.go). generate writes the -n
// submissions seed would send to stdout, one JSON object a line, for
// another store to load the same data (docs/bench/victorialogs.sh). See
// docs/benchmarks.md.
//
// Every run is bounded in time and count, and only loopback addresses are accepted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Bounds of every run.
const (
	maxDuration    = 2 * time.Hour
	maxMessages    = 10_000_000
	maxConnections = 4096
	maxRate        = 1_000_000
)

type options struct {
	url, key     string
	load         load
	seed         uint64
	items        int
	poolSize     int
	limits       []string
	mongoURI     string
	esURL        string
	batches      []int
	workers      []int
	baselineEach time.Duration
	verify       bool
	verifyIn     string
	mongoDB      string
	esPrefix     string
	sqliteDir    string
	verifyWithin time.Duration
	sample       time.Duration
	writeShare   float64
	n            int
	spread       time.Duration
	label        string
	wait         time.Duration
	rare         int
	format       string
	pid          int
	direct       string
	directScope  string
	cpuProfile   string
	bodyFile     string
	live         bool
	statsQuery   string
	proxy        proxyOptions
	fair         fairOptions
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if handler, ok := childHandlers[strings.Join(args, " ")]; ok {
		if err := serveChild(handler(), stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "reqlog-bench %s: %v\n", args[0], err)
			return 1
		}
		return 0
	}
	opts, mode, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "reqlog-bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if opts.cpuProfile != "" {
		stopProfile, err := startCPUProfile(opts.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "reqlog-bench:", err)
			return 1
		}
		defer stopProfile()
	}
	if err := execute(ctx, mode, opts, stdout); err != nil {
		fmt.Fprintln(stderr, "reqlog-bench:", err)
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (options, string, error) {
	var o options
	fs := flag.NewFlagSet("reqlog-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base URL of the reqlog server (loopback only)")
	fs.StringVar(&o.key, "key", os.Getenv("REQLOG_BENCH_KEY"), "API key (default $REQLOG_BENCH_KEY)")
	fs.IntVar(&o.load.connections, "connections", 64, "concurrent connections (closed model), or initial workers with -rate (seed: default 8)")
	fs.IntVar(&o.load.rate, "rate", 0, "requests per second (open model); 0: as fast as -connections allow")
	fs.DurationVar(&o.load.duration, "duration", 10*time.Second, "how long the workload runs")
	fs.DurationVar(&o.load.timeout, "timeout", 10*time.Second, "timeout of one request")
	fs.IntVar(&o.load.maxWorkers, "max-workers", 2048, "with -rate: most requests in flight, each on a connection kept open")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated traffic")
	fs.IntVar(&o.items, "items", 1, "submissions per ingest request")
	fs.IntVar(&o.poolSize, "pool", 2000, "distinct request bodies generated before the run")
	limits := fs.String("limit", "", "also measure ceilings, comma-separated: decode (a plain JSON decode), bare (the service's parser), mongodb, elasticsearch or sqlite (direct store; sqlite in a temporary directory)")
	fs.StringVar(&o.mongoURI, "mongodb-uri", "mongodb://127.0.0.1:27017", "MongoDB of -limit mongodb")
	fs.StringVar(&o.esURL, "elasticsearch-url", "http://127.0.0.1:9200", "Elasticsearch of -limit elasticsearch")
	batches := fs.String("baseline-batches", "100,500,1000", "batch sizes the direct store baseline tries")
	workers := fs.String("baseline-workers", "4,16", "goroutines appending at once that the direct store baseline tries; the best combination is the limit")
	fs.DurationVar(&o.baselineEach, "baseline-each", 4*time.Second, "how long the direct store baseline runs each combination")
	fs.BoolVar(&o.verify, "verify", false, "afterwards, look up every acknowledged message")
	fs.DurationVar(&o.verifyWithin, "verify-within", time.Minute, "how long -verify waits for a message to be readable")
	fs.StringVar(&o.verifyIn, "verify-in", "", "with -verify: look the ids up in the server's store directly, in bulk, instead of one API call each: mongodb (-mongodb-uri) or elasticsearch (-elasticsearch-url)")
	fs.StringVar(&o.mongoDB, "mongodb-database", "reqlog", "the server's MongoDB database, for -verify-in")
	fs.StringVar(&o.esPrefix, "elasticsearch-index-prefix", "reqlog", "the server's index prefix, for -verify-in")
	fs.DurationVar(&o.sample, "sample", 0, "read the server's memory from /metrics this often (soak: 10s)")
	fs.Float64Var(&o.writeShare, "write-share", 0.8, "mixed and soak: share of requests that submit")
	fs.IntVar(&o.n, "n", 100_000, "seed: messages to store; generate: to write")
	fs.DurationVar(&o.spread, "spread", 24*time.Hour, "seed: created_at spread over this much of the past")
	fs.IntVar(&o.rare, "rare", 10_000, "seed: one message in this many carries the token that search looks for")
	fs.StringVar(&o.format, "format", "ndjson", "export: ndjson or csv")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id (Linux): ingest and mixed report its CPU per message, fetch, search and stats per request, export its exact peak resident size")
	fs.StringVar(&o.direct, "direct", "", "seed: store the messages through the store adapter instead of the API: elasticsearch (-elasticsearch-url, -elasticsearch-index-prefix) or sqlite (-sqlite-dir, with reqlogd stopped: one process per directory)")
	fs.StringVar(&o.sqliteDir, "sqlite-dir", "./reqlog-data", "the data directory of -direct sqlite")
	fs.StringVar(&o.directScope, "direct-scope", "bench:live", "seed with -direct: the account:domain that owns the messages (the server's API key's)")
	fs.StringVar(&o.fair.heavyKey, "heavy-key", "", "fair: the API key of the account whose statistics calls contend with -key's requests")
	fs.IntVar(&o.fair.heavyConnections, "heavy-connections", 3, "fair: the heavy account's statistics calls kept in flight")
	fs.StringVar(&o.fair.heavyQ, "heavy-q", "qzv9wxk", "fair: the q of the heavy account's statistics calls (default: a text no message holds, so every text is read)")
	fs.StringVar(&o.label, "label", "", "a name for this run in the report, e.g. the store")
	fs.StringVar(&o.proxy.upstream, "upstream", "127.0.0.1:18090", "proxy: where the tool serves the upstream, which reqlogd's REQLOG_PROXY_UPSTREAM must name")
	fs.IntVar(&o.proxy.rounds, "rounds", 3, "proxy: rounds of each proxy, alternating, per phase")
	fs.IntVar(&o.proxy.rate, "proxy-rate", 1000, "proxy: requests per second of the latency phase")
	fs.StringVar(&o.statsQuery, "stats-query", "", "stats: query parameters added to /v1/stats, e.g. q=application or name=shop-frontend")
	fs.BoolVar(&o.live, "live", false, "ingest: each request's submissions are generated as it is sent, created then, instead of taken from the pool made at the start (created all at once): traffic that fills the minutes as it arrives, for reads measured while it does")
	fs.StringVar(&o.bodyFile, "body", "", "ingest: every message is this file's submission (one JSON object, e.g. docs/bench/submission-1.8kb.py's output), -items of them per request, instead of the generated mix; -limit's stores append the same")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the tool's own CPU profile to this file (seed -direct: the store's writes are in it)")
	fs.DurationVar(&o.wait, "wait", 0, "first wait this long at most for the server's /healthz to answer")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reqlog-bench [flags] ingest|fetch|mixed|seed|soak|search|stats|export|proxy|fair|generate")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return o, "", errors.New("name one mode")
	}
	mode := fs.Arg(0)
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if mode == "seed" && !explicit["connections"] {
		// 8 batches of 200 in flight: enough to keep any store busy, well inside the
		// service's default queue, so that nothing is refused.
		o.load.connections = 8
	}
	if mode == "soak" {
		if !explicit["duration"] {
			o.load.duration = 2 * time.Minute
		}
		if !explicit["sample"] {
			o.sample = 10 * time.Second
		}
	}
	if *limits != "" {
		o.limits = strings.Split(*limits, ",")
	}
	var err error
	if o.batches, err = intList("-baseline-batches", *batches, 10_000); err != nil {
		return o, "", err
	}
	if o.workers, err = intList("-baseline-workers", *workers, 256); err != nil {
		return o, "", err
	}
	return o, mode, o.check(mode)
}

// intList parses a comma-separated list of numbers from 1 to most.
func intList(flagName, list string, most int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%s: %q is not a number from 1 to %d", flagName, s, most)
		}
		out = append(out, n)
	}
	return out, nil
}

// modes are the workloads, in the order the usage lists them.
var modes = []string{"ingest", "fetch", "mixed", "seed", "soak", "search", "stats", "export", "proxy", "fair", "generate"}

func (o options) check(mode string) error {
	switch {
	case !slices.Contains(modes, mode):
		return fmt.Errorf("unknown mode %q: use %s", mode, strings.Join(modes, ", "))
	case o.load.duration <= 0 || o.load.duration > maxDuration:
		return fmt.Errorf("-duration must be from 1s to %s", maxDuration)
	case o.load.connections < 1 || o.load.connections > maxConnections:
		return fmt.Errorf("-connections must be from 1 to %d", maxConnections)
	case o.load.rate < 0 || o.load.rate > maxRate:
		return fmt.Errorf("-rate must be from 0 to %d", maxRate)
	case o.load.maxWorkers < 1 || o.load.maxWorkers > maxConnections:
		return fmt.Errorf("-max-workers must be from 1 to %d", maxConnections)
	case o.items < 1 || o.items > 1000:
		return errors.New("-items must be from 1 to 1000")
	case o.poolSize < 1 || o.poolSize > 100_000:
		return errors.New("-pool must be from 1 to 100000")
	case o.n < 1 || o.n > maxMessages:
		return fmt.Errorf("-n must be from 1 to %d", maxMessages)
	case o.baselineEach <= 0 || o.baselineEach > time.Minute:
		return errors.New("-baseline-each must be from 1s to 1m")
	case o.writeShare < 0 || o.writeShare > 1:
		return errors.New("-write-share must be from 0 to 1")
	case o.verifyWithin <= 0 || o.verifyWithin > maxDuration:
		return fmt.Errorf("-verify-within must be from 1s to %s", maxDuration)
	case o.rare < 1:
		return errors.New("-rare must be at least 1")
	case o.proxy.rounds < 1 || o.proxy.rounds > 100:
		return errors.New("-rounds must be from 1 to 100")
	case o.proxy.rate < 1 || o.proxy.rate > maxRate:
		return fmt.Errorf("-proxy-rate must be from 1 to %d", maxRate)
	case o.fair.heavyConnections < 1 || o.fair.heavyConnections > maxConnections:
		return fmt.Errorf("-heavy-connections must be from 1 to %d", maxConnections)
	case o.format != "ndjson" && o.format != "csv":
		return fmt.Errorf("-format %q: use ndjson or csv", o.format)
	}
	if _, err := url.ParseQuery(o.statsQuery); err != nil {
		return fmt.Errorf("-stats-query %q: %w", o.statsQuery, err)
	}
	if o.direct != "" {
		if mode != "seed" || (o.direct != "elasticsearch" && o.direct != "sqlite") {
			return errors.New("-direct: use -direct elasticsearch or -direct sqlite with seed")
		}
		if u, err := url.Parse(o.esURL); o.direct == "elasticsearch" && (err != nil || !isLoopback(u.Hostname())) {
			return fmt.Errorf("-direct: %q is not on this machine: the tool only sends load to loopback addresses", o.esURL)
		}
		if _, err := directScope(o.directScope); err != nil {
			return err
		}
	}
	if o.verifyIn != "" && o.verifyIn != "mongodb" && o.verifyIn != "elasticsearch" {
		return fmt.Errorf("-verify-in %q: use mongodb or elasticsearch", o.verifyIn)
	}
	for _, limit := range o.limits {
		if !slices.Contains([]string{"decode", "bare", "mongodb", "elasticsearch", "sqlite"}, limit) {
			return fmt.Errorf("-limit %q: use decode, bare, mongodb, elasticsearch or sqlite", limit)
		}
		target := map[string]string{"mongodb": o.mongoURI, "elasticsearch": o.esURL}[limit]
		if u, err := url.Parse(target); target != "" && (err != nil || !isLoopback(u.Hostname())) {
			return fmt.Errorf("-limit %s: %q is not on this machine: the tool only sends load to loopback addresses", limit, target)
		}
	}
	return nil
}

func execute(ctx context.Context, mode string, o options, stdout io.Writer) error {
	if mode == "generate" {
		return newGenerator(o.seed).generate(o, time.Now(), stdout)
	}
	if o.direct != "" {
		return seedDirect(ctx, newGenerator(o.seed), o, stdout)
	}
	if mode == "proxy" {
		return proxyBench(ctx, o, stdout)
	}
	srv, err := newServer(o.url, o.key)
	if err != nil {
		return err
	}
	if err := srv.waitHealthy(ctx, o.wait); err != nil {
		return err
	}
	title := mode
	if o.label != "" {
		title = o.label + " " + mode
	}
	gen := newGenerator(o.seed)
	var sm *sampler
	if o.sample > 0 {
		sm = &sampler{server: srv, interval: o.sample, out: stdout}
	}
	switch mode {
	case "seed":
		return seed(ctx, srv, gen, o, stdout)
	case "fetch":
		mix, err := srv.prepareFetch(ctx)
		if err != nil {
			return err
		}
		readAttack(title, o, srv.fetchTargets(mix, o.seed), sm, stdout)
		return nil
	case "search":
		target, err := srv.prepareSearch(ctx, stdout)
		if err != nil {
			return err
		}
		readAttack(title, o, srv.getTargets(target), sm, stdout)
		return nil
	case "stats":
		target, err := srv.prepareStats(ctx, o.statsQuery, stdout)
		if err != nil {
			return err
		}
		readAttack(title, o, srv.getTargets(target), sm, stdout)
		return nil
	case "export":
		return srv.export(ctx, title, o, stdout)
	case "fair":
		return srv.fair(ctx, title, o, stdout)
	}
	bodies := gen.pool(o.poolSize, o.items, time.Now())
	if o.bodyFile != "" {
		if bodies, err = fileBodies(o.bodyFile, o.items); err != nil {
			return err
		}
	}
	targets := srv.ingestTargets(bodies)
	if o.live {
		targets = srv.liveTargets(gen, o.items)
	}
	if mode == "mixed" || mode == "soak" {
		mix, err := srv.prepareFetch(ctx)
		if err != nil {
			return err
		}
		targets = mixedTargets(targets, srv.fetchTargets(mix, o.seed), o.writeShare, o.seed)
	}
	ceilings := make([]ceiling, len(o.limits))
	for i, limit := range o.limits {
		if ceilings[i], err = measureLimit(ctx, limit, o, bodies, stdout); err != nil {
			return err
		}
	}
	cpu := startCPU(o.pid)
	rep := attack(title, o.load, o.items, targets, o.verify, sm)
	rep.print(stdout)
	serverCPU := cpu.per(rep.ingested())
	printCPU(stdout, fmt.Sprintf("the server (pid %d)", o.pid), serverCPU)
	if waited := cpu.waitedPer(rep.ingested()); waited > 0 {
		fmt.Fprintf(stdout, "cpu: the server's threads waited %.1fµs per message for a CPU (run queue, /proc/<pid>/task/*/schedstat)\n",
			float64(waited)/float64(time.Microsecond))
	}
	printRatios(stdout, rep.ingestRate(), serverCPU, o.limits, ceilings)
	if o.verify {
		var v verification
		switch o.verifyIn {
		case "mongodb":
			v, err = verifyInMongo(ctx, o.mongoURI, o.mongoDB, rep.acked, o.verifyWithin)
		case "elasticsearch":
			v, err = verifyInElasticsearch(ctx, o.esURL, o.esPrefix, rep.acked, o.verifyWithin)
		default:
			v = srv.verify(ctx, rep.acked, o.verifyWithin)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "verify: %d acknowledged, %d found, %d missing (in %s)\n", v.acknowledged, v.found,
			v.acknowledged-v.found, v.took.Round(time.Millisecond))
		if v.found != v.acknowledged {
			return fmt.Errorf("acknowledged messages are missing, e.g. %v", v.missing)
		}
	}
	return nil
}

// readAttack runs a read workload and, with -pid, prints the server's CPU per
// request: a read acknowledges no message to divide by.
func readAttack(title string, o options, targets vegeta.Targeter, sm *sampler, stdout io.Writer) {
	cpu := startCPU(o.pid)
	rep := attack(title, o.load, o.items, targets, false, sm)
	rep.print(stdout)
	if perRequest := cpu.per(float64(rep.all.Requests)); perRequest > 0 {
		fmt.Fprintf(stdout, "cpu: the server (pid %d) spent %.2fms per request (user and system, /proc/<pid>/stat)\n",
			o.pid, float64(perRequest)/float64(time.Millisecond))
	}
	if waited := cpu.waitedPer(float64(rep.all.Requests)); waited > 0 {
		fmt.Fprintf(stdout, "cpu: the server's threads waited %.2fms per request for a CPU (run queue, /proc/<pid>/task/*/schedstat)\n",
			float64(waited)/float64(time.Millisecond))
	}
}

// ceiling is what a limit measured: messages per second, and for a handler in
// a child process its CPU per message (0: not measured).
type ceiling struct {
	rate float64
	cpu  time.Duration
}

// measureLimit measures the ingest ceiling named limit.
func measureLimit(ctx context.Context, limit string, o options, bodies [][]byte, stdout io.Writer) (ceiling, error) {
	if limit == "bare" || limit == "decode" {
		child, err := startChild("serve-" + limit)
		if err != nil {
			return ceiling{}, err
		}
		defer child.stop()
		childSrv, err := newServer(child.url, "")
		if err != nil {
			return ceiling{}, err
		}
		cpu := startCPU(child.pid())
		rep := attack("limit: "+limit+" handler", o.load, o.items, childSrv.ingestTargets(bodies), false, nil)
		rep.print(stdout)
		c := ceiling{rate: rep.ingestRate(), cpu: cpu.per(rep.ingested())}
		printCPU(stdout, "the "+limit+" handler", c.cpu)
		return c, nil
	}
	var b *baseline
	var err error
	switch limit {
	case "mongodb":
		b, err = openMongoBaseline(ctx, o.mongoURI)
	case "sqlite":
		b, err = openSQLiteBaseline(ctx)
	default:
		b, err = openElasticBaseline(ctx, o.esURL)
	}
	if err != nil {
		return ceiling{}, fmt.Errorf("-limit %s: %w", limit, err)
	}
	runs, err := measureBaseline(ctx, b, bodies, o.batches, o.workers, o.baselineEach)
	if cleanupErr := b.cleanup(context.WithoutCancel(ctx)); cleanupErr != nil {
		fmt.Fprintf(stdout, "warning: cleaning up the %s baseline: %v\n", limit, cleanupErr)
	}
	if err != nil {
		return ceiling{}, err
	}
	fmt.Fprintf(stdout, "\n== limit: direct %s store, %s per combination\n", limit, o.baselineEach)
	best, bestCPU := 0.0, time.Duration(0)
	for _, r := range runs {
		fmt.Fprintf(stdout, "batch %5d x %3d goroutines: %8.0f messages/s (%d failed appends), %.1fµs of CPU per message\n",
			r.batch, r.workers, r.rate, r.failures, float64(r.cpu)/float64(time.Microsecond))
		if r.rate > best {
			best, bestCPU = r.rate, r.cpu
		}
	}
	return ceiling{rate: best, cpu: bestCPU}, nil
}

// seedBatch is seed's default submissions per request: about 1 MB of the
// generated traffic, well under the default body limit of 5 MiB.
const seedBatch = 200

// seed stores o.n messages through the API in batches of -items (default
// seedBatch), created_at spread over the last -spread, and reports the rate and
// the server's memory before and after.
func seed(ctx context.Context, srv *server, gen *generator, o options, stdout io.Writer) error {
	items := o.items
	if items == 1 {
		items = seedBatch
	}
	requests := (o.n + items - 1) / items
	rssBefore, heapBefore := srv.memory()
	now := time.Now()
	header := srv.header()
	next := make(chan []byte, o.load.connections)
	go func() {
		defer close(next)
		for i := 0; i < requests && ctx.Err() == nil; i++ {
			batch := make([]submission, min(items, o.n-i*items))
			for j := range batch {
				batch[j] = gen.seedSubmission(i*items+j, now, o.spread, o.rare)
			}
			next <- body(batch)
		}
	}()
	targets := func(t *vegeta.Target) error {
		b, ok := <-next
		if !ok {
			return errNoTargets
		}
		*t = vegeta.Target{Method: "POST", URL: srv.base + "/v1/messages", Body: b, Header: header}
		return nil
	}
	seedLoad := o.load
	seedLoad.rate, seedLoad.duration = 0, maxDuration
	rep := attack(fmt.Sprintf("seed %d messages", o.n), seedLoad, items, targets, false, nil)
	rep.print(stdout)
	rssAfter, heapAfter := srv.memory()
	fmt.Fprintf(stdout, "server memory: rss %s -> %s, heap in use %s -> %s\n", mib(rssBefore), mib(rssAfter),
		mib(heapBefore), mib(heapAfter))
	submitted := float64(rep.all.BytesOut.Total)
	fmt.Fprintf(stdout, "submitted: %s of request bodies, %.0f bytes per message\n", mib(submitted), submitted/float64(o.n))
	if rssBefore >= 0 && rssAfter >= 0 && o.n >= 100_000 {
		perMillion := 1e6 / float64(o.n)
		fmt.Fprintf(stdout, "per million messages, garbage not yet collected included: rss +%s, heap +%s; rss growth %.2f times the bodies submitted\n",
			mib((rssAfter-rssBefore)*perMillion), mib((heapAfter-heapBefore)*perMillion), (rssAfter-rssBefore)/submitted)
	}
	// A 503 (the store too slow or failing) stored nothing of its batch, as a
	// 429 or a failure did: the seed is short by those batches.
	if failed := rep.byOutcome[outcomeFailed]; failed != nil || rep.byOutcome[outcomeRefused] != nil ||
		rep.byOutcome[outcomeUnavailable] != nil {
		return fmt.Errorf("not every seed request succeeded: %v; %.0f of %d messages stored", rep.all.StatusCodes,
			rep.ingested(), o.n)
	}
	return nil
}

// printRatios prints rate against each limit, and the server's CPU per message
// (serverCPU, 0 if unknown) against each handler's. With the bare handler and a
// store measured in one run it also prints the most the service can reach when
// the store shares its cores: sharedCoreBound.
func printRatios(w io.Writer, rate float64, serverCPU time.Duration, limits []string, ceilings []ceiling) {
	bare := 0.0
	for i, limit := range limits {
		c := ceilings[i]
		fmt.Fprintf(w, "ratio to the %s limit: %.0f / %.0f messages/s = %.0f%%\n", limit, rate, c.rate, 100*rate/c.rate)
		if serverCPU > 0 && c.cpu > 0 {
			fmt.Fprintf(w, "cpu per message against the %s handler: %.1fµs / %.1fµs = %.2f times\n", limit,
				float64(serverCPU)/float64(time.Microsecond), float64(c.cpu)/float64(time.Microsecond),
				float64(serverCPU)/float64(c.cpu))
		}
		if limit == "bare" {
			bare = c.rate
		}
	}
	for i, limit := range limits {
		if limit == "bare" || limit == "decode" || bare == 0 {
			continue
		}
		direct := ceilings[i].rate
		bound := sharedCoreBound(bare, direct)
		fmt.Fprintf(w, "shared-core bound with %s: %.0f messages/s (%.0f%% of the direct store) if it is CPU-bound; reached %.0f%% of it\n",
			limit, bound, 100*bound/direct, 100*rate/bound)
	}
}

// sharedCoreBound is the most messages per second the service and a store can
// handle together when both are CPU-bound on the same cores: a message then costs
// the machine 1/bare + 1/direct seconds. The bare handler pays neither the store
// driver's encoding nor group commit, so the service stays below it; a store that
// leaves cores idle at its limit (FerretDB's SQLite writes one at a time) leaves
// the service room beyond it.
func sharedCoreBound(bare, direct float64) float64 {
	return 1 / (1/bare + 1/direct)
}

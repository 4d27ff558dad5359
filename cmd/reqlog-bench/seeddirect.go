package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// directSeedBatch is how many messages one Append of a direct seed writes: the
// size the direct-store baseline found best for Elasticsearch.
const directSeedBatch = 500

// directScope parses -direct-scope, "account:domain".
func directScope(spec string) (domain.Scope, error) {
	account, dom, ok := strings.Cut(spec, ":")
	if !ok || account == "" || !domain.ValidDomain(dom) {
		return domain.Scope{}, fmt.Errorf("-direct-scope %q: use account:live or account:test", spec)
	}
	return domain.Scope{Account: account, Domain: dom}, nil
}

// seedDirect stores the messages seed would send (the same generator, seed and
// rare token) through the store adapter's own Append, as the direct-store
// baseline does, instead of through the API: for a million messages the API's
// path cost most of an hour on two shared cores. Each message goes through the
// service's parser and policy, so what is stored is what reqlogd would store;
// only the visible time follows the policy's default delay.
func seedDirect(ctx context.Context, gen *generator, o options, stdout io.Writer) error {
	scope, err := directScope(o.directScope)
	if err != nil {
		return err
	}
	if o.direct == "sqlite" {
		store, err := sqlite.New(ctx, sqlite.Config{Dir: o.sqliteDir})
		if err != nil {
			return fmt.Errorf("-direct sqlite: %w", err)
		}
		return errors.Join(seedInto(ctx, store, scope, gen, o, stdout), store.Close())
	}
	// Refreshing every second while a million messages go in costs the node
	// most of its time in small segments and their merges; the seed's store
	// refreshes hourly, and the service's interval is restored afterwards.
	cfg := elastic.Config{Addresses: []string{o.esURL}, IndexPrefix: o.esPrefix}
	seeding := cfg
	seeding.RefreshInterval = time.Hour
	store, err := elastic.New(ctx, seeding)
	if err != nil {
		return fmt.Errorf("-direct elasticsearch: %w", err)
	}
	err = seedInto(ctx, store, scope, gen, o, stdout)
	_ = store.Close(context.WithoutCancel(ctx))
	// New applies the configured refresh interval to the indices that exist
	// and to the template, as reqlogd does at start-up.
	restored, restoreErr := elastic.New(context.WithoutCancel(ctx), cfg)
	if restoreErr != nil {
		return errors.Join(err, fmt.Errorf("-direct elasticsearch: restoring the refresh interval of %s-messages-*: %w "+
			"(starting reqlogd on that prefix restores it too)", o.esPrefix, restoreErr))
	}
	return errors.Join(err, restored.Close(context.WithoutCancel(ctx)))
}

// seedInto appends o.n generated messages to w from -connections goroutines.
func seedInto(ctx context.Context, w ports.MessageWriter, scope domain.Scope, gen *generator, o options, stdout io.Writer) error {
	policy := servicePolicy()
	validator := policy.Validator()
	now := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One generator (its random source is not shared), batches parsed and
	// appended by the workers.
	bodies := make(chan []byte, o.load.connections)
	go func() {
		defer close(bodies)
		for i := 0; i < o.n; i += directSeedBatch {
			batch := make([]submission, min(directSeedBatch, o.n-i))
			for j := range batch {
				batch[j] = gen.seedSubmission(i+j, now, o.spread, o.rare)
			}
			select {
			case bodies <- body(batch):
			case <-ctx.Done():
				return
			}
		}
	}()
	var stored atomic.Int64
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() { firstErr = err; cancel() })
	}
	began := time.Now()
	var wg sync.WaitGroup
	for range o.load.connections {
		wg.Go(func() {
			for raw := range bodies {
				batch, err := httpapi.ParseSubmissions(validator, raw, time.Now())
				if err != nil {
					fail(fmt.Errorf("a generated body does not parse: %w", err))
					return
				}
				msgs := make([]domain.Message, len(batch.Submissions))
				for i, s := range batch.Submissions {
					id, err := domain.NewIdentity()
					if err != nil {
						fail(err)
						return
					}
					msgs[i] = policy.NewMessage(scope, s, id, time.Now())
				}
				// Append either stores the whole batch or fails; a failure ends the
				// seed rather than leaving a gap that the counts would hide.
				if err := w.Append(ctx, msgs); err != nil {
					fail(fmt.Errorf("append after %d stored: %w", stored.Load(), err))
					return
				}
				stored.Add(int64(len(msgs)))
			}
		})
	}
	progress := time.NewTicker(30 * time.Second)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-progress.C:
			fmt.Fprintf(stdout, "seed: %d of %d stored after %s%s\n", stored.Load(), o.n, time.Since(began).Round(time.Second), ownMemory())
		}
	}
	progress.Stop()
	took := time.Since(began)
	n := stored.Load()
	into := o.sqliteDir
	if o.direct == "elasticsearch" {
		into = o.esURL + ", " + o.esPrefix
	}
	fmt.Fprintf(stdout, "seed: %d messages stored directly (%s) in %s: %.0f messages/s from %d goroutines%s\n",
		n, into, took.Round(time.Millisecond), float64(n)/took.Seconds(), o.load.connections, ownMemory())
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return errors.Join(firstErr, fmt.Errorf("%d of %d messages stored", n, o.n))
	}
	return nil
}

// ownMemory is this process's resident size now and at its peak, and its Go
// heap in use, as the seed grows the store (Linux; empty elsewhere).
func ownMemory() string {
	rss, err := procStatusBytes(os.Getpid(), "VmRSS:")
	if err != nil {
		return ""
	}
	peak, _ := procStatusBytes(os.Getpid(), "VmHWM:")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("; rss %s (peak %s), Go heap in use %s", mib(rss), mib(peak), mib(float64(ms.HeapInuse)))
}

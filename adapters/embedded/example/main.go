// Command example is a shop's server with reqlog inside: its routes are
// captured into a reqlog core on the SQLite store, reqlog's API and portal are
// served under /logs, and SIGTERM stops it without losing a capture. The
// README's "Embed it" shows it whole.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/embedded"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// One process per directory: another one holding it is refused, named.
	store, err := sqlite.New(ctx, sqlite.Config{Dir: cmp.Or(os.Getenv("LOGS_DIR"), "shop-logs")})
	if err != nil {
		return err
	}
	shop := domain.Scope{Account: "shop", Domain: domain.DomainLive}
	core, err := embedded.New(ctx, embedded.Options{
		Store: store, // the core closes it
		Keys: keyring.New([]keyring.Entry{
			{Account: shop.Account, Domain: shop.Domain, Digest: keyring.Digest(os.Getenv("LOGS_KEY"))}}),
		Scope:    shop, // what Capture stores as
		BasePath: "/logs",
		ReadOnly: true, // messages come from Capture only
		Portal:   &portal.Config{Secret: []byte(os.Getenv("LOGS_PORTAL_SECRET"))},
		Capture:  capture.Options{Name: func(*http.Request) string { return "shop" }},
	})
	if err != nil {
		return errors.Join(err, store.Close())
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id": %q, "status": "paid"}`, r.PathValue("id"))
	})
	mux.Handle("/logs/", core.Handler())
	srv := &http.Server{Handler: core.Capture(mux), ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), ":8080"))
	if err != nil {
		return errors.Join(err, core.Close(ctx))
	}
	log.Printf("shop on http://%s, its logs on /logs/portal", ln.Addr())
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()

	// The server first, so that its last requests are captured, then the core:
	// it stores what Capture queued and closes the store.
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = errors.Join(srv.Shutdown(shutdown), core.Close(shutdown))
	s := core.CaptureStats()
	log.Printf("captured %d exchanges: %d stored, %d dropped, %d failed", s.Captured, s.Submitted, s.Dropped, s.Failed)
	return err
}

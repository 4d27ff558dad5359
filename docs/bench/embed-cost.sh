#!/bin/bash
# What an embedder links, as docs/benchmarks.md ("What an embedder links")
# measured it: binary size (go build, and with -ldflags='-s -w'), modules in
# the binary (go version -m), packages outside the standard library
# (go list -deps) and whether fx and dig are among them, for
#   hello    a net/http hello world, the floor
#   capture  (a) capture middleware submitting through the Go client
#   memory   the core (embedded.New) on the memory store: the core alone
#   sqlite   (b) the core on SQLite: adapters/embedded/example
#   reqlogd  (c) everything: the server, every store, proxy, OTLP
# Run from the repository's root: docs/bench/embed-cost.sh
set -eu
tmp=_embedcost # inside the module, ignored by ./... (leading _)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hello" "$tmp/capture" "$tmp/memory" "$tmp/bin"
cat >"$tmp/hello/main.go" <<'GO'
package main

import (
	"fmt"
	"net/http"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") })
	_ = http.ListenAndServe(":8080", nil)
}
GO
cat >"$tmp/capture/main.go" <<'GO'
package main

import (
	"fmt"
	"net/http"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpclient"
)

func main() {
	client, err := httpclient.New("http://reqlog.internal:8080", "a-long-random-key")
	if err != nil {
		panic(err)
	}
	rec := capture.New(client, capture.Options{})
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") })
	_ = http.ListenAndServe(":8080", rec.Middleware(http.DefaultServeMux))
}
GO
cat >"$tmp/memory/main.go" <<'GO'
package main

import (
	"context"
	"net/http"

	"github.com/reqlog/reqlog/adapters/embedded"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
)

func main() {
	core, err := embedded.New(context.Background(), embedded.Options{Store: memory.New(),
		Scope: domain.Scope{Account: "shop", Domain: domain.DomainLive}, BasePath: "/logs"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/logs/", core.Handler())
	_ = http.ListenAndServe(":8080", core.Capture(mux))
}
GO
printf '%-8s %9s %9s %7s %9s %s\n' program bytes stripped modules packages fx/dig
for p in hello:./$tmp/hello capture:./$tmp/capture memory:./$tmp/memory sqlite:./adapters/embedded/example reqlogd:./cmd/reqlogd; do
	name=${p%%:*} pkg=${p#*:}
	CGO_ENABLED=0 go build -o "$tmp/bin/$name" "$pkg"
	CGO_ENABLED=0 go build -ldflags='-s -w' -o "$tmp/bin/$name-s" "$pkg"
	modules=$(go version -m "$tmp/bin/$name" | grep -c $'^\tdep' || true)
	packages=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$pkg" | grep -c . || true)
	fx=$(go list -deps "$pkg" | grep -cE '^go\.uber\.org/(fx|dig)(/|$)' || true)
	printf '%-8s %9d %9d %7d %9d %s\n' "$name" "$(stat -c %s "$tmp/bin/$name")" "$(stat -c %s "$tmp/bin/$name-s")" \
		"$modules" "$packages" "$([ "$fx" -gt 0 ] && echo linked || echo no)"
done
echo
echo "modules of capture:"; go version -m "$tmp/bin/capture" | grep $'^\tdep' | cut -f3
echo "modules of sqlite:"; go version -m "$tmp/bin/sqlite" | grep $'^\tdep' | cut -f3 | tr '\n' ' '; echo

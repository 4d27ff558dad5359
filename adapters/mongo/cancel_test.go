package mongo_test

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// holdingProxy forwards TCP connections to a MongoDB server. While holding,
// a connection whose client sends a query (a find or aggregate command) gets
// no reply: the query waits as it would on a slow server. The proxy reports
// each query it holds, and each held connection its client then closes.
type holdingProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	holding bool

	held chan struct{} // a query is held
	left chan struct{} // the client of a held query closed its connection
}

// queryCommands are how a find or an aggregate command starts in an OP_MSG
// body: the command's name as the first key of the document (BSON type 0x02,
// a string: the collection's name).
var queryCommands = [][]byte{[]byte("\x02find\x00"), []byte("\x02aggregate\x00")}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{ln: ln, target: target, held: make(chan struct{}, 16), left: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.forward(client) })
		}
	})
	return p
}

func (p *holdingProxy) hold(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = on
}

func (p *holdingProxy) isHolding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holding
}

func (p *holdingProxy) forward(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var held sync.Once
	var isHeld bool
	var mu sync.Mutex
	replies := make(chan struct{})
	go func() { // server to client, until the connection is held
		defer close(replies)
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			mu.Lock()
			drop := isHeld
			mu.Unlock()
			if n > 0 && !drop {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for { // client to server
		n, err := client.Read(buf)
		if n > 0 && p.isHolding() && (bytes.Contains(buf[:n], queryCommands[0]) || bytes.Contains(buf[:n], queryCommands[1])) {
			held.Do(func() {
				mu.Lock()
				isHeld = true
				mu.Unlock()
				p.held <- struct{}{}
			})
		}
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			mu.Lock()
			left := isHeld
			mu.Unlock()
			if left {
				p.left <- struct{}{}
			}
			return
		}
	}
}

// through is uri with its host replaced by the proxy's.
func (p *holdingProxy) through(t *testing.T, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// A list and a statistics call whose caller goes away while MongoDB runs its
// query close that query's connection, which MongoDB (4.2 and later) takes as
// the signal to kill the operation: the request's context reaches the query.
func TestCancelledReadsCloseTheirQuery(t *testing.T) {
	uri, db := mongotest.NewDatabase(t)
	target, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newHoldingProxy(t, target.Host)
	s := mustOpen(t, mongo.Config{URI: proxy.through(t, uri), Database: db})
	now := time.Now()
	if err := s.Append(opCtx(t), []domain.Message{newMessage(t, now), newMessage(t, now.Add(-time.Second))}); err != nil {
		t.Fatal(err)
	}
	conformance.RunCancelledReads(t, s, scope, conformance.QueryWatch{Hold: proxy.hold, Held: proxy.held, Left: proxy.left})
}

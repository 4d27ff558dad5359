package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// retryRefused is the Retry-After of a request refused for the in-flight bound:
// a slot frees as soon as any forwarded request ends.
const retryRefused = time.Second

// gate is what every request passes before it is recorded and forwarded: a slot
// among Config.MaxInFlight, and a pace its body must keep.
type gate struct {
	slots       chan struct{}
	bodyTimeout time.Duration
	refused     atomic.Uint64
}

func newGate(maxInFlight int, bodyTimeout time.Duration) *gate {
	return &gate{slots: make(chan struct{}, maxInFlight), bodyTimeout: bodyTimeout}
}

// handler refuses a request when every slot is taken, with 503 and
// Retry-After, unrecorded: storing refusals would add the load of an overload
// to the store's queue. Otherwise the request holds its slot while next
// serves it (an upgraded connection until it closes).
func (g *gate) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case g.slots <- struct{}{}:
			defer func() { <-g.slots }()
		default:
			g.refused.Add(1)
			w.Header().Set("Retry-After", strconv.Itoa(int(retryRefused/time.Second)))
			http.Error(w, fmt.Sprintf("503 Service Unavailable: the proxy is forwarding %d requests, its limit; retry later", cap(g.slots)),
				http.StatusServiceUnavailable)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &pacedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), timeout: g.bodyTimeout}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.whole.Load() {
			// net/http reads what is left of the body after the handler, to
			// reuse the connection: at the same pace.
			_ = body.rc.SetReadDeadline(time.Now().Add(g.bodyTimeout))
		}
	})
}

// pacedBody holds a client to timeout between two reads of its body: each read
// gets bytes within it or fails, and then so does every later read, and the
// connection is closed. (The server's ReadTimeout, on the whole request, would
// also cut long uploads on slow links.)
type pacedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	whole   atomic.Bool // read to its end (by the transport's goroutine)
}

func (b *pacedBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		// Once the body is read, the server reads on to see the client leave;
		// a deadline left here would cut a long reply.
		b.whole.Store(true)
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

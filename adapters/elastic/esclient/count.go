package esclient

import (
	"context"
	"sync"
)

// Requests counts the requests a client sends under a context made by
// CountRequests, by operation: what one statistics call asked the cluster,
// for its trace. It is safe for concurrent use.
type Requests struct {
	mu  sync.Mutex
	ops []string
}

type requestsKey struct{}

// CountRequests returns a context under which every request a Client sends
// is counted in the returned Requests (a request the transport retried
// counts once).
func CountRequests(ctx context.Context) (context.Context, *Requests) {
	r := &Requests{}
	return context.WithValue(ctx, requestsKey{}, r), r
}

// Len is how many requests were sent.
func (r *Requests) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Ops are the operations of the requests sent, in order.
func (r *Requests) Ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

// count notes a request of op sent under ctx, when ctx counts them.
func count(ctx context.Context, op string) {
	if r, ok := ctx.Value(requestsKey{}).(*Requests); ok {
		r.mu.Lock()
		r.ops = append(r.ops, op)
		r.mu.Unlock()
	}
}

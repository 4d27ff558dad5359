package dayfile

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// maxMergedMessages bounds the messages of the Appends one transaction
// writes together: four of the group committer's full batches, so that a
// transaction stays of the size the committer's bounds were measured at.
const maxMergedMessages = 2000

// appendQueue is a file's Appends waiting for its writer: one Append
// writes at a time (the leader); those arriving meanwhile wait, and when
// it is done the first of them leads the next transaction, writing every
// one waiting then (within maxMergedMessages) together. Each waiter holds
// the file (Dir.Acquire) until answered, so it stays open.
type appendQueue struct {
	mu      sync.Mutex
	writing bool
	waiting []*appendRequest
}

type appendRequest struct {
	ctx        context.Context // the caller's: a lone retry's (File.appendAll)
	msgs       []domain.Message
	indexWords bool
	done       chan error // buffered: the leader never waits for a caller
}

// errYourTurn, sent on a waiting request's done, makes its caller the leader.
var errYourTurn = errors.New("dayfile: lead the next append")

// wait returns errYourTurn once req's caller leads (at once when no Append
// is writing), or req's outcome when another leader wrote it. A caller
// whose ctx ends while req waits untaken gets ctx's error and nothing of it
// is written; once taken, its outcome is waited for.
func (q *appendQueue) wait(ctx context.Context, req *appendRequest) error {
	q.mu.Lock()
	if !q.writing {
		q.writing = true
		q.mu.Unlock()
		// Appends released with this one (by the transaction of another
		// file) may be about to arrive: let them queue, to join.
		runtime.Gosched()
		return errYourTurn
	}
	q.waiting = append(q.waiting, req)
	q.mu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		if q.withdraw(req) {
			return fmt.Errorf("append: the caller gave up before the write: %w: %w", ports.ErrUnavailable, ctx.Err())
		}
		return <-req.done
	}
}

// withdraw takes req out of the queue; false if a leader took it or made
// its caller the leader.
func (q *appendQueue) withdraw(req *appendRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, waiting := range q.waiting {
		if waiting == req {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// take returns the leader's req and the requests waiting behind it that
// join its transaction: of the same indexWords, within maxMergedMessages.
func (q *appendQueue) take(req *appendRequest) []*appendRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch, messages := []*appendRequest{req}, len(req.msgs)
	rest := q.waiting[:0]
	for _, waiting := range q.waiting {
		if waiting.indexWords == req.indexWords && messages+len(waiting.msgs) <= maxMergedMessages {
			batch = append(batch, waiting)
			messages += len(waiting.msgs)
		} else {
			rest = append(rest, waiting)
		}
	}
	clear(q.waiting[len(rest):])
	q.waiting = rest
	return batch
}

// handOver makes the first waiting request's caller the next leader, or
// lets the next Append lead at once.
func (q *appendQueue) handOver() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.writing = false
		return
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	next.done <- errYourTurn
}

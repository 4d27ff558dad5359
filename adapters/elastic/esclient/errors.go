package esclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// esError is an error reply of Elasticsearch, for a whole request or one bulk item.
type esError struct {
	Type     string   `json:"type"`
	Reason   string   `json:"reason"`
	CausedBy *esError `json:"caused_by,omitempty"`
}

func (e *esError) String() string {
	if e == nil {
		return "no error details"
	}
	s := e.Type + ": " + e.Reason
	if e.CausedBy != nil && e.CausedBy.Reason != "" {
		s += " (caused by " + e.CausedBy.Type + ": " + e.CausedBy.Reason + ")"
	}
	return s
}

// transient reports whether a request or item that failed with status and
// error may succeed if the same call is made later: overload (429), server-side
// failures (5xx) and index blocks, which are lifted again (a purge checking an
// index, a flood-stage disk watermark).
func transient(status int, e *esError) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status >= 500 || (e != nil && e.Type == "cluster_block_exception")
}

// ErrIndexNotFound marks a request that named an index that does not exist.
var ErrIndexNotFound = errors.New("index not found")

// ErrIndexExists marks the creation of an index that exists already.
var ErrIndexExists = errors.New("index exists")

// failure builds the error of op that failed with status and e, wrapping
// ports.ErrOverloaded when the cluster is busy (429: its queues are full; not an
// outage, so the service answers 429 and keeps its queue), ports.ErrUnavailable
// when it is otherwise transient, domain.ErrTooLarge when the request was over
// the cluster's http.max_content_length, and ErrIndexNotFound.
func failure(op string, status int, e *esError) error {
	switch {
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("elastic: %s: %w: status %d, %s", op, ports.ErrOverloaded, status, e)
	case transient(status, e):
		return fmt.Errorf("elastic: %s: %w: status %d, %s", op, ports.ErrUnavailable, status, e)
	case status == http.StatusRequestEntityTooLarge:
		return fmt.Errorf("elastic: %s: the request is larger than Elasticsearch accepts "+
			"(its http.max_content_length is below MaxRequestBytes): %w", op, domain.ErrTooLarge)
	case status == http.StatusNotFound && e != nil && e.Type == "index_not_found_exception":
		return fmt.Errorf("elastic: %s: %w: status %d, %s", op, ErrIndexNotFound, status, e)
	case status == http.StatusBadRequest && e != nil && e.Type == "resource_already_exists_exception":
		return fmt.Errorf("elastic: %s: %w: status %d, %s", op, ErrIndexExists, status, e)
	}
	return fmt.Errorf("elastic: %s: status %d, %s", op, status, e)
}

// transportError wraps an error of the HTTP round trip. A caller that gave up
// is not an outage and keeps only its context's error; anything else (refused
// connections, timeouts, resets) means the cluster is unreachable for now.
func transportError(ctx context.Context, op string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("elastic: %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("elastic: %s: %w: %w", op, ports.ErrUnavailable, err)
}

// maxReplyBytes bounds what is read of an error reply.
const maxReplyBytes = 64 << 10

// replyError reads an error reply of op.
func replyError(op string, res *esapi.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxReplyBytes))
	var reply struct {
		Error json.RawMessage `json:"error"`
	}
	e := &esError{Type: http.StatusText(res.StatusCode)}
	if json.Unmarshal(raw, &reply) == nil && len(reply.Error) > 0 {
		if json.Unmarshal(reply.Error, e) != nil {
			_ = json.Unmarshal(reply.Error, &e.Reason) // some replies carry a plain string
		}
	}
	return failure(op, res.StatusCode, e)
}

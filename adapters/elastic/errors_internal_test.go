package elastic

import (
	"errors"
	"net/http"
	"testing"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A busy cluster (429) is load, which the service answers with 429 and keeps its
// queue for; an outage (5xx, a timeout) is ErrUnavailable, which fails the queue
// at once.
func TestBusyIsOverloadedAndDownIsUnavailable(t *testing.T) {
	rejected := &esError{Type: "es_rejected_execution_exception", Reason: "rejected execution"}
	for _, c := range []struct {
		status int
		e      *esError
		want   error
	}{
		{http.StatusTooManyRequests, rejected, ports.ErrOverloaded},
		{http.StatusServiceUnavailable, nil, ports.ErrUnavailable},
		{http.StatusRequestTimeout, nil, ports.ErrUnavailable},
		{http.StatusForbidden, &esError{Type: "cluster_block_exception"}, ports.ErrUnavailable},
	} {
		err := failure("append", c.status, c.e)
		if !errors.Is(err, c.want) || errors.Is(err, otherOf(c.want)) {
			t.Errorf("failure with status %d: %v, want only %v", c.status, err, c.want)
		}
	}

	msgs := []domain.Message{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	reply := func(statuses ...int) bulkReply {
		var r bulkReply
		for _, status := range statuses {
			item := bulkItem{Status: status}
			if status >= 300 {
				item.Error = rejected
			}
			r.Items = append(r.Items, bulkEntry{Create: item})
		}
		return r
	}
	for _, c := range []struct {
		statuses []int
		want     error
	}{
		{[]int{201, 429, 429}, ports.ErrOverloaded},
		{[]int{429, 503, 201}, ports.ErrUnavailable},
		{[]int{409, 503, 503}, ports.ErrUnavailable},
	} {
		err := checkBulk(msgs, 0, reply(c.statuses...))
		if !errors.Is(err, c.want) || errors.Is(err, otherOf(c.want)) {
			t.Errorf("bulk items %v: %v, want only %v", c.statuses, err, c.want)
		}
	}
	if err := checkBulk(msgs, 0, reply(201, 429, 400)); errors.Is(err, ports.ErrOverloaded) || errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("bulk items with a refused document: %v, want neither transient error", err)
	}
}

func otherOf(err error) error {
	if err == ports.ErrOverloaded {
		return ports.ErrUnavailable
	}
	return ports.ErrOverloaded
}

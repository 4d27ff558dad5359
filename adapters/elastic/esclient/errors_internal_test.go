package esclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"

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

	targets := []Target{{ID: "a"}, {ID: "b"}, {ID: "c"}}
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
		err := checkBulk(targets, 0, reply(c.statuses...))
		if !errors.Is(err, c.want) || errors.Is(err, otherOf(c.want)) {
			t.Errorf("bulk items %v: %v, want only %v", c.statuses, err, c.want)
		}
	}
	if err := checkBulk(targets, 0, reply(201, 429, 400)); errors.Is(err, ports.ErrOverloaded) || errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("bulk items with a refused document: %v, want neither transient error", err)
	}
}

// A reply that does not account for every message never counts as stored: an
// item without a create result, or too few items, fails the batch.
func TestBulkReplyWithoutEveryOutcomeFails(t *testing.T) {
	targets := []Target{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	created := bulkEntry{Create: bulkItem{Status: http.StatusCreated}}
	blocked := &esError{Type: "cluster_block_exception", Reason: "index read-only"}
	for _, c := range []struct {
		name  string
		items []bulkEntry
		want  error // nil: failed, and not worth retrying
		says  string
	}{
		{"an item without a create result", []bulkEntry{created, {}, created}, nil, "message 1 (id b): no create result"},
		{"an item without a status", []bulkEntry{created, created, {Create: bulkItem{Error: blocked}}}, ports.ErrUnavailable, "cluster_block_exception"},
		{"one item short", []bulkEntry{created, created}, nil, "2 items for 3 messages"},
		{"no items", nil, nil, "0 items for 3 messages"},
	} {
		err := checkBulk(targets, 0, bulkReply{Items: c.items})
		switch {
		case err == nil:
			t.Errorf("%s: the batch counted as stored", c.name)
		case c.want == nil && (errors.Is(err, ports.ErrUnavailable) || errors.Is(err, ports.ErrOverloaded)):
			t.Errorf("%s: %v, want neither transient error", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		case !strings.Contains(err.Error(), c.says):
			t.Errorf("%s: %q, want it to say %q", c.name, err, c.says)
		}
	}
}

func otherOf(err error) error {
	if err == ports.ErrOverloaded {
		return ports.ErrUnavailable
	}
	return ports.ErrOverloaded
}

package domain_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/domain"
)

// fillFrom builds a page of msgs and counts the messages taken.
func fillFrom(t *testing.T, limit int, msgs []domain.Message) (domain.Page, int) {
	t.Helper()
	taken := 0
	page := domain.PageOf(limit, msgs, func(m domain.Message) domain.Message { taken++; return m })
	return page, taken
}

func messagesWithBodies(n, bodyBytes int) []domain.Message {
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = domain.Message{ID: strconv.Itoa(i), Request: domain.Content{Body: strings.Repeat("x", bodyBytes)}}
	}
	return msgs
}

func TestFillPage(t *testing.T) {
	const third = domain.PageBytes / 3
	for _, tc := range []struct {
		name        string
		limit       int
		msgs        []domain.Message
		wantLen     int
		wantHasMore bool
	}{
		{"fewer than the limit", 5, messagesWithBodies(3, 10), 3, false},
		{"exactly the limit", 3, messagesWithBodies(3, 10), 3, false},
		{"more than the limit", 2, messagesWithBodies(3, 10), 2, true},
		{"the byte budget ends the page first", 10, messagesWithBodies(5, third), 3, true},
		{"the budget reached by the last message", 3, messagesWithBodies(3, third), 3, false},
		{"one message over the budget is a page", 10, messagesWithBodies(2, domain.PageBytes+1), 1, true},
		{"empty", 10, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, taken := fillFrom(t, tc.limit, tc.msgs)
			if len(page.Messages) != tc.wantLen || page.HasMore != tc.wantHasMore {
				t.Errorf("page of %d messages, has_more %t; want %d, %t", len(page.Messages), page.HasMore, tc.wantLen, tc.wantHasMore)
			}
			if taken != len(page.Messages) {
				t.Errorf("took %d messages for a page of %d: the one after the page must only be peeked at", taken, len(page.Messages))
			}
			for i, m := range page.Messages {
				if m.ID != tc.msgs[i].ID {
					t.Fatalf("message %d is %s, want %s: the page must keep the order", i, m.ID, tc.msgs[i].ID)
				}
			}
		})
	}
}

func TestFillPagePassesOnTheStoreError(t *testing.T) {
	broken := errors.New("decode failed")
	_, err := domain.FillPage(10, 0, func() bool { return true }, func() (domain.Message, error) { return domain.Message{}, broken })
	if !errors.Is(err, broken) {
		t.Errorf("FillPage = %v, want the error of take", err)
	}
}

func TestEstimatedBytesGrowsWithEveryPart(t *testing.T) {
	base := domain.Message{ID: "id", Path: "/p", Request: domain.Content{Header: map[string][]string{"A": {"b"}}}}
	bigger := []func(*domain.Message){
		func(m *domain.Message) { m.Name = "shop" },
		func(m *domain.Message) { m.Request.Body = "{}" },
		func(m *domain.Message) { m.Response.ContentType = "text/plain" },
		func(m *domain.Message) { m.Request.Header = map[string][]string{"A": {"b", "c"}} },
		func(m *domain.Message) { m.Response.Header = map[string][]string{"Set-Cookie": {"x"}} },
	}
	for i, grow := range bigger {
		m := base
		grow(&m)
		if domain.EstimatedBytes(m) <= domain.EstimatedBytes(base) {
			t.Errorf("change %d did not grow the estimate", i)
		}
	}
}

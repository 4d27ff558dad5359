package domain_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

func storedExchange() domain.Message {
	at := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	return domain.Message{
		ID: "5bb609d0-f7fb-53ca-8465-244a8284da09", Reference: "msg_u7ViXPv1D7WN", Account: "acme", Domain: "live",
		Name: "shop", IPAddress: "10.0.0.1", Method: "POST", Path: "/orders", StatusCode: 201,
		Request:   domain.Content{Header: domain.Header{"Accept": {"*/*"}}, Body: "{}", ContentType: "application/json"},
		Response:  domain.Content{Header: domain.Header{"Set-Cookie": {"a", "b"}}, Body: "ok", ContentType: "text/plain"},
		CreatedAt: at, UpdatedAt: at, VisibleAt: at.Add(5 * time.Second), ExpiresAt: at.Add(24 * time.Hour),
	}
}

func TestSameSubmission(t *testing.T) {
	retried := storedExchange()
	retried.UpdatedAt = retried.UpdatedAt.Add(time.Minute)
	retried.VisibleAt = retried.VisibleAt.Add(time.Minute)
	retried.ExpiresAt = retried.ExpiresAt.Add(time.Hour) // a retention changed between the two
	if !domain.SameSubmission(storedExchange(), retried) {
		t.Error("a retry stored later is not the same submission")
	}
	noHeaders, emptyHeaders := storedExchange(), storedExchange()
	noHeaders.Request.Header, emptyHeaders.Request.Header = nil, domain.Header{}
	if !domain.SameSubmission(noHeaders, emptyHeaders) {
		t.Error("no header map and an empty one differ")
	}

	for name, change := range map[string]func(*domain.Message){
		"id":                  func(m *domain.Message) { m.ID = "d861b8c2-4eee-5d2c-897d-faa7e8b8a1d6" },
		"reference":           func(m *domain.Message) { m.Reference = "msg_SuhnJ7zcOM6M" },
		"account":             func(m *domain.Message) { m.Account = "globex" },
		"domain":              func(m *domain.Message) { m.Domain = "test" },
		"name":                func(m *domain.Message) { m.Name = "shop-2" },
		"ip_address":          func(m *domain.Message) { m.IPAddress = "" },
		"method":              func(m *domain.Message) { m.Method = "PUT" },
		"path":                func(m *domain.Message) { m.Path = "/orders/1" },
		"route":               func(m *domain.Message) { m.Route = "/orders/{id}" },
		"status_code":         func(m *domain.Message) { m.StatusCode = 200 },
		"created_at":          func(m *domain.Message) { m.CreatedAt = m.CreatedAt.Add(time.Microsecond) },
		"request body":        func(m *domain.Message) { m.Request.Body = "{ }" },
		"response type":       func(m *domain.Message) { m.Response.ContentType = "text/html" },
		"a header value":      func(m *domain.Message) { m.Request.Header = domain.Header{"Accept": {"text/html"}} },
		"a header more":       func(m *domain.Message) { m.Request.Header = domain.Header{"Accept": {"*/*"}, "X": {""}} },
		"a header renamed":    func(m *domain.Message) { m.Request.Header = domain.Header{"Accept-Language": {"*/*"}} },
		"header value order":  func(m *domain.Message) { m.Response.Header = domain.Header{"Set-Cookie": {"b", "a"}} },
		"an empty value list": func(m *domain.Message) { m.Response.Header = domain.Header{"Set-Cookie": {}} },
	} {
		changed := storedExchange()
		change(&changed)
		if domain.SameSubmission(storedExchange(), changed) || domain.SameSubmission(changed, storedExchange()) {
			t.Errorf("a different %s is the same submission", name)
		}
	}
}

// Clone's values share one slice, so each name's values must be capped: growing
// one must not write over another's, nor anything reach the original.
func TestHeaderCloneSharesNothing(t *testing.T) {
	original := domain.Header{"A": {"a1", "a2"}, "B": {"b1"}, "C": {"c1", "c2", "c3"}, "Empty": {}}
	clone := original.Clone()
	clone["A"][0] = "changed" // before any append could move it
	for name := range clone {
		clone[name] = append(clone[name], "added to "+name)
		for other, values := range clone {
			if other != name && slices.Contains(values, "added to "+name) {
				t.Fatalf("appending to %s changed %s: %q", name, other, values)
			}
		}
	}
	want := domain.Header{"A": {"a1", "a2"}, "B": {"b1"}, "C": {"c1", "c2", "c3"}, "Empty": {}}
	if !reflect.DeepEqual(original, want) {
		t.Errorf("the original changed with its clone: %q", original)
	}
	want["A"][0] = "changed"
	for name, values := range want {
		if got := clone[name]; len(got) != len(values)+1 || !slices.Equal(got[:len(values)], values) {
			t.Errorf("clone[%s] = %q, want %q and the added value", name, got, values)
		}
	}
}

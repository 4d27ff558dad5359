package httpclient

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
)

var exchangeNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func sampleExchange() domain.Exchange {
	return domain.Exchange{
		Name:      "shop",
		CreatedAt: exchangeNow.Add(-time.Minute + 1234567*time.Nanosecond),
		IPAddress: "2001:DB8:0::1",
		Method:    "post",
		Path:      "/orders?page=2&q=a%20b",
		Request: domain.ExchangeRequest{
			Header: map[string][]string{"content-type": {"application/json"}, "Authorization": {"Bearer secret"}},
			Body:   `{"a":1}`,
		},
		Response: domain.ExchangeResponse{
			StatusCode: 201,
			Header:     map[string][]string{"Set-Cookie": {"s=1", "t=2"}, "X-Trace": {"abc"}},
			Body:       "created",
		},
	}
}

// A duration goes out as duration_ms to the microsecond; an unknown one is
// left out.
func TestEncodeExchangesDuration(t *testing.T) {
	for _, tc := range []struct {
		duration time.Duration
		has      bool
		want     string
	}{
		{789 * time.Microsecond, true, `"duration_ms":0.789`},
		{1234567891 * time.Nanosecond, true, `"duration_ms":1234.567`},
		{0, true, `"duration_ms":0.000`},
		{domain.MaxDuration, true, `"duration_ms":86400000.000`},
		{5 * time.Second, false, ""},
	} {
		e := sampleExchange()
		e.Duration, e.HasDuration = tc.duration, tc.has
		body, err := encodeExchanges([]domain.Exchange{e})
		if err != nil {
			t.Fatal(err)
		}
		if tc.has && !strings.Contains(string(body), tc.want) || !tc.has && strings.Contains(string(body), "duration_ms") {
			t.Errorf("%v (known %t) encoded as %s, want %s", tc.duration, tc.has, body, tc.want)
		}
	}
}

// What the client sends is validated by the service exactly as the same
// exchanges submitted in process (app.LocalSubmitter, domain.DraftsOf): the
// same submissions or the same errors.
func FuzzExchangesAsJSONOrDrafts(f *testing.F) {
	f.Add("shop", "post", "/orders?page=2", "203.0.113.9", "Content-Type", "application/json", `{"password":"x"}`, 201, int64(1500), true, 3)
	f.Add("", "", "", "", "", "", "", 0, int64(-1), false, 0)
	f.Add(" caf\xe9 ", "g\xffet", "/\xed\xa0\x80", "fe80::1%eth0", "x_api_key", "\xff", "\u2028\"\\", 99, int64(86400000001), true, 7)
	policy := domain.DefaultPolicy()
	validator := policy.Validator()
	f.Fuzz(func(t *testing.T, name, method, path, ip, headerName, headerValue, body string, status int, durationMicros int64, hasDuration bool, shape int) {
		e := domain.Exchange{Name: name, Method: method, Path: path, IPAddress: ip,
			CreatedAt: exchangeNow.Add(-time.Duration(durationMicros) * time.Millisecond),
			Request:   domain.ExchangeRequest{Body: body},
			Response:  domain.ExchangeResponse{StatusCode: status, Body: body + name},
			Duration:  time.Duration(durationMicros) * time.Microsecond, HasDuration: hasDuration}
		switch shape % 5 {
		case 1:
			e.Request.Header = map[string][]string{headerName: {headerValue}, "Content-Type": {headerValue}}
		case 2:
			e.Response.Header = map[string][]string{headerName: nil}
		case 3:
			e.Request.Header = map[string][]string{headerName: {}, strings.ToLower(headerName): {headerValue, name}}
		case 4:
			e.CreatedAt = time.Time{}
		}
		exchanges := []domain.Exchange{e, sampleExchange()}
		encoded, err := encodeExchanges(exchanges)
		if err != nil {
			t.Fatal(err)
		}
		overHTTP, httpErr := httpapi.ParseSubmissions(validator, encoded, exchangeNow)
		inProcess, localErr := validator.ValidateSubmissions(domain.DraftsOf(exchanges), exchangeNow)
		if fmt.Sprint(httpErr) != fmt.Sprint(localErr) || !reflect.DeepEqual(overHTTP, inProcess) {
			t.Fatalf("%+v\nover HTTP: %+v, %v\nin process: %+v, %v", e, overHTTP, httpErr, inProcess, localErr)
		}
	})
}

// route is sent when known and left out when not, for the service to read once
// submissions carry it (CONTRACT.md, "Route templates").
func TestEncodeExchangesRoute(t *testing.T) {
	withRoute, without := sampleExchange(), sampleExchange()
	withRoute.Route = "/orders/{id}"
	body, err := encodeExchanges([]domain.Exchange{withRoute, without})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(body), `"route":"/orders/{id}"`); n != 1 || strings.Count(string(body), `"route"`) != 1 {
		t.Errorf("encoded %s, want route once, on the first item", body)
	}
	batch, err := httpapi.ParseSubmissions(domain.DefaultPolicy().Validator(), body, exchangeNow)
	if err != nil || len(batch.Submissions) != 2 {
		t.Errorf("parsed %d submissions, %v; want 2", len(batch.Submissions), err)
	}
}

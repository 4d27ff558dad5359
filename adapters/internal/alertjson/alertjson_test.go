package alertjson_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/internal/alertjson"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
)

var scope = domain.Scope{Account: "acme", Domain: "live"}

func rule(at time.Time) alerting.Rule {
	return alerting.Rule{ID: "alr_0123456789abcdef", Scope: scope, Title: "Orders",
		Filter: alerting.Filter{Name: "shop", PathPrefix: "/v1/orders", Method: "POST", StatusClasses: []int{4, 5}},
		Metric: alerting.MetricDurationP99, Comparison: alerting.BelowOrEqual, Threshold: 12.5, ResolveThreshold: 20.25,
		Window: 90 * time.Minute, For: 150 * time.Second, MinRequests: 7, NoData: alerting.NoDataFiring,
		RepeatInterval: 26 * time.Hour, EndpointIDs: []string{"whe_0123456789abcdef"}, Enabled: true,
		CreatedAt: at, UpdatedAt: at.Add(time.Microsecond)}
}

// What the stores keep as this JSON reads back to the same domain value.
func TestRoundTrips(t *testing.T) {
	at := time.Date(2026, 3, 2, 3, 4, 5, 123456000, time.UTC)
	r := rule(at)
	raw, err := alertjson.EncodeRule(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := alertjson.DecodeRule(raw, scope)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("rule: %+v, %v\nwant %+v", back, err, r)
	}
	bare := alerting.Rule{ID: "alr_0123456789abcdef", Scope: scope, Metric: alerting.MetricRequestCount,
		Comparison: alerting.Above, NoData: alerting.NoDataKeep, Window: time.Minute, CreatedAt: at, UpdatedAt: at}
	raw, _ = alertjson.EncodeRule(bare)
	if back, err := alertjson.DecodeRule(raw, scope); err != nil || back.Title != "" || back.Filter.StatusClasses != nil ||
		len(back.EndpointIDs) != 0 || back.For != 0 || back.RepeatInterval != 0 {
		t.Errorf("bare rule: %+v, %v", back, err)
	}
	o := alerting.Observation{From: at, To: at.Add(5 * time.Minute), Count: 10, Status: stats.StatusCounts{1, 2, 3, 2, 2},
		Errors: 4, ServerErrors: 2, Duration: stats.DurationSummary{Count: 9, P50: 1.5, P95: 9.25, P99: 12.125},
		Value: 0.4, HasValue: true, TopPaths: []stats.KeyCount{{Key: "/a", Count: 6, Errors: 1}}}
	e := alerting.Event{ID: "evt_0123456789abcdef", Type: alerting.EventResolved, At: at, Rule: r, Status: alerting.Resolved,
		Previous: alerting.Firing, Reason: alerting.ReasonNoData, Since: at.Add(-time.Hour), Observation: o, Repeat: true,
		PortalURL: "https://x/portal"}
	raw, err = alertjson.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := alertjson.DecodeEvent(raw, scope); err != nil || !reflect.DeepEqual(back, e) {
		t.Errorf("event: %+v, %v\nwant %+v", back, err, e)
	}
	o.HasValue, o.Value, o.Duration, o.TopPaths = false, 0, stats.DurationSummary{}, nil
	raw, _ = alertjson.EncodeWindow(o)
	if back, err := alertjson.DecodeWindow(raw); err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("window without data: %+v, %v\nwant %+v", back, err, o)
	}
}

// The payload's paths are cut on a character boundary.
func TestPayloadCutsLongPaths(t *testing.T) {
	long := "/" + string(make([]rune, 0))
	for range alertjson.MaxPayloadPath {
		long += "é"
	}
	w := alertjson.WindowOf(alerting.Observation{TopPaths: []stats.KeyCount{{Key: long}}})
	if p := w.TopPaths[0].Path; len(p) > alertjson.MaxPayloadPath || p[len(p)-2:] != "é" {
		t.Errorf("cut path ends %q (%d bytes)", p[len(p)-4:], len(p))
	}
}

// A body that is not one JSON object is refused whole, showing the example.
func TestFields(t *testing.T) {
	fields, err := alertjson.Fields([]byte(`{"metric":"error_rate","threshold":0.05,"name":null}`), alertjson.RuleExample)
	if err != nil || fields["metric"] != "error_rate" || fields["threshold"] != 0.05 || fields["name"] != nil || len(fields) != 3 {
		t.Errorf("Fields = %v, %v", fields, err)
	}
	for _, body := range []string{``, `[]`, `null`, `{"metric":"error_rate"} {}`, `"x"`} {
		var invalid *domain.ValidationError
		if _, err := alertjson.Fields([]byte(body), alertjson.RuleExample); !errors.As(err, &invalid) || !strings.Contains(invalid.Message, alertjson.RuleExample) {
			t.Errorf("body %q: %v, want a validation error showing the example", body, err)
		}
	}
}

// A number JSON allows and a float64 cannot hold is refused naming its field,
// as ParseRule names a number out of its range.
func TestFieldsNameANumberBeyondFloat64(t *testing.T) {
	for body, field := range map[string]string{
		`{"metric":"error_rate","threshold":1e400}`:          "threshold",
		`{"resolve_threshold":-1e400,"threshold":0.5}`:       "resolve_threshold",
		`{"endpoint_ids":["whe_x",2e999],"threshold":1e308}`: "endpoint_ids",
	} {
		_, err := alertjson.Fields([]byte(body), alertjson.RuleExample)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != field {
			t.Errorf("body %s: %v, want a validation error naming %s", body, err, field)
		}
	}
	fields, err := alertjson.Fields([]byte(`{"threshold":1e308,"min_requests":5,"window":"5m","endpoint_ids":["whe_x"]}`), alertjson.RuleExample)
	if err != nil || fields["threshold"] != 1e308 || fields["min_requests"] != 5.0 || fields["window"] != "5m" {
		t.Errorf("Fields = %v, %v; want numbers as float64", fields, err)
	}
}

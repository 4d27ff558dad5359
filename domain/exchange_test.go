package domain

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

func sampleExchange() Exchange {
	return Exchange{
		Name:      "shop",
		CreatedAt: testNow.Add(-time.Minute + 1234567*time.Nanosecond),
		IPAddress: "2001:DB8:0::1",
		Method:    "post",
		Path:      "/orders?page=2&q=a%20b",
		Request: ExchangeRequest{
			Header: map[string][]string{"content-type": {"application/json"}, "Authorization": {"Bearer secret"}},
			Body:   `{"a":1}`,
		},
		Response: ExchangeResponse{
			StatusCode: 201,
			Header:     map[string][]string{"Set-Cookie": {"s=1", "t=2"}, "X-Trace": {"abc"}},
			Body:       "created",
		},
	}
}

// validateExchanges validates exchanges as LocalSubmitter submits them.
func validateExchanges(exchanges ...Exchange) (Batch, error) {
	return DefaultPolicy().ValidateSubmissions(DraftsOf(exchanges), testNow)
}

func TestDraftsOfGoThroughTheValidator(t *testing.T) {
	batch, err := validateExchanges(sampleExchange(), Exchange{Name: "bare", CreatedAt: testNow, Method: "GET", Path: "/", Response: ExchangeResponse{StatusCode: 204}})
	if err != nil {
		t.Fatal(err)
	}
	if !batch.Multiple || len(batch.Submissions) != 2 {
		t.Fatalf("parsed %+v, want a batch of 2", batch)
	}
	want := Submission{
		Name:       "shop",
		IPAddress:  "2001:db8::1",
		Method:     "POST",
		Path:       "/orders?page=2&q=a%20b",
		StatusCode: 201,
		CreatedAt:  Micro(sampleExchange().CreatedAt),
		Request: Content{
			Header:      Header{"Content-Type": {"application/json"}, "Authorization": {Mask}},
			Body:        `{"a":1}`,
			Size:        7,
			ContentType: "application/json",
			JSONBody:    `{"a":1}`, // found JSON: the rules need not check it again
		},
		Response: Content{
			Header:      Header{"Set-Cookie": {Mask, Mask}, "X-Trace": {"abc"}},
			Body:        "created",
			Size:        7,
			ContentType: "text/plain",
		},
	}
	if got := batch.Submissions[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	bare := batch.Submissions[1]
	if bare.IPAddress != "" || len(bare.Request.Header) != 0 || bare.Response.Body != "" || bare.StatusCode != 204 {
		t.Errorf("an exchange without optional parts parsed as %+v", bare)
	}
}

func TestDraftsOfLeaveErrorsToTheValidator(t *testing.T) {
	missing := sampleExchange()
	missing.CreatedAt = time.Time{}
	missing.Name = ""
	nullValues := sampleExchange()
	nullValues.Response.Header = map[string][]string{"X-Empty": nil}
	_, err := validateExchanges(sampleExchange(), missing, nullValues)
	assertFields(t, err, "[1].name", "[1].created_at", "[2].response.header.X-Empty")
}

func TestInvalidItems(t *testing.T) {
	err := &ValidationError{Message: "bad", Fields: []FieldError{
		{Field: "[3].method"}, {Field: "[0].path"}, {Field: "[3].name"},
		{Field: "name"}, {Field: "[9].path"}, {Field: "[x].path"}, {Field: "[-1].path"}, {Field: "[2"},
	}}
	if got := InvalidItems(err, 5); !slices.Equal(got, []int{3, 0}) {
		t.Errorf("InvalidItems = %v, want [3 0]: in order, once each, only indexes inside the batch", got)
	}
	if got := InvalidItems(&ValidationError{Message: "the request body is not valid JSON"}, 5); len(got) != 0 {
		t.Errorf("an error naming no item gave %v", got)
	}
}

// A duration goes as duration_ms to the microsecond and comes through the
// validator as it went; an unknown one is left out.
func TestDraftsOfDuration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		duration time.Duration
		has      bool
		want     time.Duration
		wantJSON string
	}{
		{"sub-millisecond", 789 * time.Microsecond, true, 789 * time.Microsecond, `0.789`},
		{"nanoseconds dropped", 1234567891 * time.Nanosecond, true, 1234567 * time.Microsecond, `1234.567`},
		{"zero is known", 0, true, 0, `0.000`},
		{"the maximum", MaxDuration, true, MaxDuration, `86400000.000`},
		{"unknown", 5 * time.Second, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sampleExchange()
			e.Duration, e.HasDuration = tc.duration, tc.has
			drafts := DraftsOf([]Exchange{e})
			if sent := drafts.Items[0].DurationMS; string(sent.Text) != tc.wantJSON || (sent.Kind != jsonbytes.Absent) != tc.has {
				t.Errorf("duration_ms %q (%v), want %q", sent.Text, sent.Kind, tc.wantJSON)
			}
			batch, err := DefaultPolicy().ValidateSubmissions(drafts, testNow)
			if err != nil {
				t.Fatal(err)
			}
			got := batch.Submissions[0]
			if got.HasDuration != tc.has || got.Duration != tc.want {
				t.Errorf("parsed duration %v (known %t), want %v (known %t)", got.Duration, got.HasDuration, tc.want, tc.has)
			}
		})
	}
}

// Out-of-range durations are not clamped on the way out: the one validator
// names them.
func TestDraftsOfLeaveBadDurationsToTheValidator(t *testing.T) {
	negative, tooLong := sampleExchange(), sampleExchange()
	negative.Duration, negative.HasDuration = -time.Millisecond, true
	tooLong.Duration, tooLong.HasDuration = MaxDuration+time.Microsecond, true
	_, err := validateExchanges(sampleExchange(), negative, tooLong)
	assertFields(t, err, "[1].duration_ms", "[2].duration_ms")
}

// Validation tells the rules which bodies it found JSON within MaxNesting
// (Content.JSONBody), declared so or not, redacted or not; and the verdict
// no longer holds once the body is changed.
func TestValidationTellsWhichBodiesAreJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		body, contentType string
		isJSON            bool
	}{
		{`{"password":"x","a":[1]}`, "application/json", true},
		{"\uFEFF [1,2]", "", true},
		{`{"a":1}`, "text/plain", true},
		{deep(MaxNesting), "application/json", true},
		{deep(MaxNesting + 1), "application/json", false},
		{`{"a":1`, "application/json", false},
		{"a=1&b=2", "application/x-www-form-urlencoded", false},
		{"plain text", "", false},
	} {
		e := sampleExchange()
		e.Request.Body, e.Request.Header = c.body, map[string][]string{}
		if c.contentType != "" {
			e.Request.Header["Content-Type"] = []string{c.contentType}
		}
		batch, err := validateExchanges(e)
		if err != nil {
			t.Fatal(err)
		}
		got := batch.Submissions[0].Request
		if got.BodyIsJSON() != c.isJSON || c.isJSON && got.JSONBody != got.Body {
			t.Errorf("%.30q as %q: JSONBody %.30q of body %.30q, want it JSON: %v", c.body, c.contentType, got.JSONBody, got.Body, c.isJSON)
		}
		if got.Body = got.Body[:len(got.Body)-1]; got.BodyIsJSON() {
			t.Errorf("%.30q cut to %.30q: still called JSON", c.body, got.Body)
		}
	}
}

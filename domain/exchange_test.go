package domain

import (
	"reflect"
	"slices"
	"testing"
	"time"
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

func TestEncodeExchangesGoesThroughTheValidator(t *testing.T) {
	body, err := EncodeExchanges([]Exchange{sampleExchange(), {Name: "bare", CreatedAt: testNow, Method: "GET", Path: "/", Response: ExchangeResponse{StatusCode: 204}}})
	if err != nil {
		t.Fatal(err)
	}
	batch := mustParse(t, string(body))
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

func TestEncodeExchangesLeavesErrorsToTheValidator(t *testing.T) {
	missing := sampleExchange()
	missing.CreatedAt = time.Time{}
	missing.Name = ""
	body, err := EncodeExchanges([]Exchange{sampleExchange(), missing})
	if err != nil {
		t.Fatal(err)
	}
	_, err = parse(t, string(body))
	assertFields(t, err, "[1].name", "[1].created_at")
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

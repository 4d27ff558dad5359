package domain

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Exchange is one HTTP exchange as a client submits it: plain input, not yet
// validated. Every way in (HTTP or in-process) renders it with EncodeExchanges and
// goes through ParseSubmissions (Policy's or Parser's), so there is one validator.
type Exchange struct {
	// Name is the application the exchange belongs to.
	Name string
	// CreatedAt is when the request arrived; the zero time is sent as absent, which
	// the service rejects as "created_at is required".
	CreatedAt time.Time
	// IPAddress of the client; "" when unknown.
	IPAddress string
	Method    string
	// Path with its raw query string, as sent ("/orders?page=2").
	Path string
	// Route is the template the server matched ("/orders/{id}"), "" when not
	// known; sent as the contract's optional route.
	Route    string
	Request  ExchangeRequest
	Response ExchangeResponse
	// Duration is how long the server took to answer, sent as duration_ms to the
	// microsecond; HasDuration false leaves it out (unknown).
	Duration    time.Duration
	HasDuration bool
}

// ExchangeRequest is the captured request side. http.Header assigns to Header as is.
type ExchangeRequest struct {
	Header map[string][]string
	Body   string
}

// ExchangeResponse is the captured response side.
type ExchangeResponse struct {
	StatusCode int
	Header     map[string][]string
	Body       string
}

// exchangeJSON is a submission object of the contract (spec section 2.1).
type exchangeJSON struct {
	Name      string `json:"name"`
	CreatedAt string `json:"created_at,omitempty"`
	IPAddress string `json:"ip_address,omitempty"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Route     string `json:"route,omitempty"`
	// DurationMS is a json.Number so that it is written exactly as formatted.
	DurationMS json.Number          `json:"duration_ms,omitempty"`
	Request    exchangeRequestJSON  `json:"request"`
	Response   exchangeResponseJSON `json:"response"`
}

type exchangeRequestJSON struct {
	Header map[string][]string `json:"header,omitempty"`
	Body   string              `json:"body"`
}

type exchangeResponseJSON struct {
	StatusCode int                 `json:"status_code"`
	Header     map[string][]string `json:"header,omitempty"`
	Body       string              `json:"body"`
}

// EncodeExchanges renders exchanges as the contract's JSON array body: created_at as
// an RFC 3339 string at microsecond precision. Bodies that are not valid UTF-8 have
// their invalid bytes replaced by U+FFFD, since a body is a JSON string.
func EncodeExchanges(exchanges []Exchange) ([]byte, error) {
	items := make([]exchangeJSON, len(exchanges))
	for i, e := range exchanges {
		items[i] = exchangeJSON{
			Name:      e.Name,
			IPAddress: e.IPAddress,
			Method:    e.Method,
			Path:      e.Path,
			Route:     e.Route,
			Request:   exchangeRequestJSON{Header: e.Request.Header, Body: e.Request.Body},
			Response: exchangeResponseJSON{StatusCode: e.Response.StatusCode,
				Header: e.Response.Header, Body: e.Response.Body},
		}
		if !e.CreatedAt.IsZero() {
			items[i].CreatedAt = FormatTime(e.CreatedAt)
		}
		if e.HasDuration {
			items[i].DurationMS = json.Number(FormatDurationMS(e.Duration))
		}
	}
	body, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("encode %d exchanges: %w", len(exchanges), err)
	}
	return body, nil
}

// FormatDurationMS writes d as the API's duration_ms: milliseconds with the
// microseconds as three decimals ("1234.567"), which the parser reads back
// exactly. Out-of-range values are written as they are, for the validator to
// refuse.
func FormatDurationMS(d time.Duration) string {
	micros := d.Microseconds()
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	return fmt.Sprintf("%s%d.%03d", sign, micros/1000, micros%1000)
}

// InvalidItems returns the indexes, in [0, n), of the batch items that err's fields
// name ("[3].method" names item 3), without repeats. A submitter can drop them and
// resubmit the rest of a batch, which is all-or-nothing.
func InvalidItems(err *ValidationError, n int) []int {
	var items []int
	seen := map[int]bool{}
	for _, f := range err.Fields {
		rest, ok := strings.CutPrefix(f.Field, "[")
		if !ok {
			continue
		}
		digits, _, ok := strings.Cut(rest, "]")
		i, convErr := strconv.Atoi(digits)
		if !ok || convErr != nil || i < 0 || i >= n || seen[i] {
			continue
		}
		seen[i] = true
		items = append(items, i)
	}
	return items
}

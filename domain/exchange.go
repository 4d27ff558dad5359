package domain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Exchange is one HTTP exchange as a client submits it: plain input, not yet
// validated. Over HTTP it is sent as the contract's JSON, decoded into Drafts;
// in process DraftsOf makes the same Drafts of it; either way one validator
// (Policy.ValidateSubmissions) checks it.
type Exchange struct {
	// Name is the application the exchange belongs to.
	Name string
	// CreatedAt is when the request arrived, sent as an RFC 3339 string to the
	// microsecond; the zero time is sent as absent, which the service rejects as
	// "created_at is required".
	CreatedAt time.Time
	// IPAddress of the client; "" when unknown (left out).
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

// ExchangeRequest is the captured request side. http.Header assigns to Header as
// is; an empty Header is left out, a nil value list is sent as null (which the
// service refuses), and strings that are not valid UTF-8 are sent with U+FFFD
// for each invalid byte, as a JSON string carries them.
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

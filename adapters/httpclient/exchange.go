package httpclient

import (
	"encoding/json"
	"fmt"

	"github.com/reqlog/reqlog/domain"
)

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

// encodeExchanges renders exchanges as the contract's JSON array body, as
// domain.Exchange describes each member: what the service decodes into the
// drafts domain.DraftsOf makes of the same exchanges in process.
func encodeExchanges(exchanges []domain.Exchange) ([]byte, error) {
	items := make([]exchangeJSON, len(exchanges))
	for i, e := range exchanges {
		items[i] = exchangeOf(e)
	}
	body, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("encode %d exchanges: %w", len(exchanges), err)
	}
	return body, nil
}

// exchangeOf is e as the contract's submission object.
func exchangeOf(e domain.Exchange) exchangeJSON {
	item := exchangeJSON{
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
		item.CreatedAt = domain.FormatTime(e.CreatedAt)
	}
	if e.HasDuration {
		item.DurationMS = json.Number(domain.FormatDurationMS(e.Duration))
	}
	return item
}

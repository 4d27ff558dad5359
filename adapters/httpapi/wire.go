package httpapi

import (
	"github.com/reqlog/reqlog/domain"
)

// Reply texts of the contract.
const (
	msgIngested   = "Logs were successfully ingested and should show up shortly"
	msgListed     = "successfully fetched messages"
	msgFetched    = "successfully fetched message"
	msgHealthy    = "ok"
	msgReady      = "ready"
	msgNotReady   = "the store is not reachable; retry later"
	msgNoEndpoint = "no such endpoint: the API lives under /v1/messages"
)

// reply is a success body with optional data.
type reply struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// listReply is the body of a listing; messages is never null.
type listReply struct {
	Status     bool           `json:"status"`
	Message    string         `json:"message"`
	Messages   []messageJSON  `json:"messages"`
	Pagination paginationJSON `json:"pagination"`
}

type paginationJSON struct {
	Limit      int     `json:"limit"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

type errorReply struct {
	Status  bool             `json:"status"`
	Message string           `json:"message"`
	Errors  []fieldErrorJSON `json:"errors,omitempty"`
}

type fieldErrorJSON struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

type identityJSON struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
}

// messageJSON is a message on the wire; the field order is the contract's. Account
// and the visibility and expiry times stay internal.
type messageJSON struct {
	ID         string      `json:"id"`
	Reference  string      `json:"reference"`
	Name       string      `json:"name"`
	Domain     string      `json:"domain"`
	IPAddress  string      `json:"ip_address"`
	StatusCode int         `json:"status_code"`
	Request    contentJSON `json:"request"`
	Response   contentJSON `json:"response"`
	Path       string      `json:"path"`
	Method     string      `json:"method"`
	CreatedAt  string      `json:"created_at"`
	UpdatedAt  string      `json:"updated_at"`
}

type contentJSON struct {
	Header      map[string][]string `json:"header"`
	Body        string              `json:"body"`
	ContentType string              `json:"content_type"`
}

func toMessageJSON(m domain.Message) messageJSON {
	return messageJSON{
		ID:         m.ID,
		Reference:  m.Reference,
		Name:       m.Name,
		Domain:     m.Domain,
		IPAddress:  m.IPAddress,
		StatusCode: m.StatusCode,
		Request:    toContentJSON(m.Request),
		Response:   toContentJSON(m.Response),
		Path:       m.Path,
		Method:     m.Method,
		CreatedAt:  domain.FormatTime(m.CreatedAt),
		UpdatedAt:  domain.FormatTime(m.UpdatedAt),
	}
}

// toContentJSON never yields a null header map or value list.
func toContentJSON(c domain.Content) contentJSON {
	header := make(map[string][]string, len(c.Header))
	for name, values := range c.Header {
		if values == nil {
			values = []string{}
		}
		header[name] = values
	}
	return contentJSON{Header: header, Body: c.Body, ContentType: c.ContentType}
}

func toIdentityJSON(id domain.Identity) identityJSON {
	return identityJSON{ID: id.ID, Reference: id.Reference}
}

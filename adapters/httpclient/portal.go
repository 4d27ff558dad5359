package httpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// PortalSession is a read-only session on one application's messages, for the
// customer portal, or on every application of the key's account and domain.
type PortalSession struct {
	// Token reads the application's messages: New(baseURL, Token) gives a client
	// that may List and Get them, and nothing else.
	Token string `json:"token"`
	// URL opens the portal page with the token; hand it to the application's owner
	// or embed it in an iframe.
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CreatePortalSession creates a portal session on application's messages that
// lasts expiresIn, in whole seconds from one minute to seven days (0: the
// service's default of one hour). An empty application gives a session on every
// application of the key's account and domain, for the owner's own support team. Only an API key may; with a portal token the
// error is a 403 *APIError. It is not retried: issuing a session stores nothing,
// so calling again is always safe.
func (c *Client) CreatePortalSession(ctx context.Context, application string, expiresIn time.Duration) (*PortalSession, error) {
	request := map[string]any{}
	if application != "" {
		request["name"] = application
	}
	if expiresIn != 0 {
		request["expires_in"] = int64(expiresIn / time.Second)
	}
	body, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err)
	}
	// {base}/v1/portal/sessions, next to {base}/v1/messages.
	r := call{method: http.MethodPost, url: c.messages.JoinPath("..", "portal", "sessions"), body: body,
		header: http.Header{"Content-Type": {"application/json"}}}
	raw, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var reply struct {
		replyText
		Data *PortalSession `json:"data"`
	}
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return nil, err
	}
	if reply.Data == nil || reply.Data.Token == "" {
		return nil, fmt.Errorf("httpclient: %s: the reply has no session", r)
	}
	return reply.Data, nil
}

package httpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain/rules"
)

// RuleSet is the account's rule set as GET /v1/rules shows it.
type RuleSet struct {
	// Version is the store's version (0: none saved); send it back to
	// ReplaceRules.
	Version int64 `json:"version"`
	// Source is "store", or "file" when a rules file rules the account
	// (FileVersion says which; the API may not change it).
	Source      string        `json:"source"`
	FileVersion string        `json:"file_version"`
	Rules       rules.RuleSet `json:"rules"`
	KeyID       string        `json:"key_id"`
	Reason      string        `json:"reason"`
	SavedAt     time.Time     `json:"saved_at"`
}

// RuleSetChange is one version of the history.
type RuleSetChange struct {
	Version int64            `json:"version"`
	KeyID   string           `json:"key_id"`
	SavedAt time.Time        `json:"saved_at"`
	Reason  string           `json:"reason"`
	Diff    rules.Difference `json:"diff"`
}

// RuleSetHistory is one page of the history, newest first.
type RuleSetHistory struct {
	Changes []RuleSetChange
	// NextBefore, when HasMore, asks for the next page.
	HasMore    bool
	NextBefore int64
}

// RulesTrial is what to try: Rules (nil: the account's current ones) on one
// exchange, given whole or as a stored message's id or reference.
type RulesTrial struct {
	Rules     *rules.RuleSet
	Source    rules.Source // "": api
	Exchange  *Exchange
	MessageID string
}

// RulesTrialResult is what the rules would do.
type RulesTrialResult struct {
	Version int64 `json:"version"`
	Stored  bool  `json:"stored"`
	// Message is the message as it would be stored; nil when it would not be.
	Message *Message    `json:"message"`
	Outcome RuleOutcome `json:"outcome"`
}

// RuleOutcome is what rules did to a message: rule ids and field paths,
// never the values they matched.
type RuleOutcome struct {
	IngestRule     string         `json:"ingest_rule"`
	SampleRate     int            `json:"sample_rate"`
	BodiesStripped bool           `json:"bodies_stripped"`
	RetentionRule  string         `json:"retention_rule"`
	ExpiresAt      time.Time      `json:"expires_at"`
	BodiesExpireAt time.Time      `json:"bodies_expire_at"`
	Changes        []rules.Change `json:"changes"`
	Counts         []rules.Count  `json:"counts"`
	Withheld       []string       `json:"withheld"`
	Subjects       int            `json:"subjects"`
}

// rulesURL is {base}/v1/rules joined with elems.
func (c *Client) rulesURL(elems ...string) *url.URL {
	return c.messages.JoinPath(append([]string{"..", "rules"}, elems...)...)
}

// rulesCall sends r and decodes the reply's data into data.
func (c *Client) rulesCall(ctx context.Context, r call, data any) error {
	raw, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	reply := struct {
		replyText
		Data any `json:"data"`
	}{Data: data}
	return decode(r, raw, &reply, &reply.replyText)
}

// Rules reads the account's rule set (GET /v1/rules). A portal session gets
// an error matching ports.ErrForbidden.
func (c *Client) Rules(ctx context.Context) (*RuleSet, error) {
	var out RuleSet
	if err := c.rulesCall(ctx, call{method: http.MethodGet, url: c.rulesURL()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReplaceRules saves rs as the account's rule set if its current version is
// version (0: none saved), saying why (PUT /v1/rules). A stale version is
// an error matching ports.ErrStale (412) and changes nothing, as does a bad
// set (a 400 *APIError naming each field). It is not retried.
func (c *Client) ReplaceRules(ctx context.Context, rs rules.RuleSet, version int64, reason string) (*RuleSet, error) {
	body, err := rules.Encode(rs)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err)
	}
	r := call{method: http.MethodPut, url: c.rulesURL(), body: body, header: http.Header{
		"Content-Type":    {"application/json"},
		"If-Match":        {`"` + strconv.FormatInt(version, 10) + `"`},
		"X-Reqlog-Reason": {reason},
	}}
	var out RuleSet
	if err := c.rulesCall(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RulesHistory reads the versions below before (0: from the newest), at most
// limit (0: the service's default of 20), each with what it changed.
func (c *Client) RulesHistory(ctx context.Context, before int64, limit int) (*RuleSetHistory, error) {
	page, err := historyPage[RuleSetChange](ctx, c, c.rulesURL("history"), before, limit)
	if err != nil {
		return nil, err
	}
	return &RuleSetHistory{Changes: page.Data, HasMore: page.Pagination.HasMore, NextBefore: page.Pagination.NextBefore}, nil
}

// TryRules shows what the rules of t would do to its exchange (POST
// /v1/rules/try); nothing is stored.
func (c *Client) TryRules(ctx context.Context, t RulesTrial) (*RulesTrialResult, error) {
	body := map[string]any{}
	if t.Rules != nil {
		raw, err := rules.Encode(*t.Rules)
		if err != nil {
			return nil, fmt.Errorf("httpclient: %w", err)
		}
		body["rules"] = json.RawMessage(raw)
	}
	if t.Source != "" {
		body["source"] = t.Source
	}
	if t.Exchange != nil {
		body["exchange"] = exchangeOf(*t.Exchange)
	}
	if t.MessageID != "" {
		body["message_id"] = t.MessageID
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err)
	}
	var out RulesTrialResult
	if err := c.rulesCall(ctx, call{method: http.MethodPost, url: c.rulesURL("try"), body: raw,
		header: http.Header{"Content-Type": {"application/json"}}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

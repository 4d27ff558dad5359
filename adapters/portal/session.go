package portal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// Lifetimes of a session.
const (
	DefaultSessionTTL = time.Hour
	MinSessionTTL     = time.Minute
	MaxSessionTTL     = 7 * 24 * time.Hour
)

// SessionRequest asks for a portal session on one application's messages, or on
// every application of the account and domain.
type SessionRequest struct {
	// Name is the application; surrounding spaces are ignored, as on submission.
	// "" (name absent or null) asks for the whole account and domain, for the
	// owner's own support team.
	Name string
	// ExpiresIn is the session's lifetime in whole seconds, from MinSessionTTL to
	// MaxSessionTTL (0: DefaultSessionTTL).
	ExpiresIn time.Duration
}

// Session is an issued portal session.
type Session struct {
	// Token is the read-only credential: Authorization: Bearer <token>.
	Token string
	// URL opens the portal page with the token in its fragment.
	URL       string
	ExpiresAt time.Time
}

// ParseSessionRequest reads {"name": "...", "expires_in": seconds} ("app" is
// accepted for "name", as the existing SDKs send it). Without a name (absent or
// null) the session covers every application; a name that is present must be 1
// to domain.MaxNameLength characters, so a blank name is an error rather than
// silently the whole account. Every problem is a *domain.ValidationError naming
// the field.
func ParseSessionRequest(body []byte) (SessionRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return SessionRequest{}, nil // no body: the whole account, the default lifetime
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return SessionRequest{}, &domain.ValidationError{
			Message: `the request body must be a JSON object such as {"name": "shop", "expires_in": 3600}`}
	}
	var req SessionRequest
	var problems []domain.FieldError
	nameField := "name"
	if isAbsent(fields["name"]) && !isAbsent(fields["app"]) {
		nameField = "app"
	}
	switch raw := fields[nameField]; {
	case isAbsent(raw):
		// The whole account and domain.
	case json.Unmarshal(raw, &req.Name) != nil:
		problems = append(problems, domain.FieldError{Field: nameField, Message: "must be a string"})
	default:
		problems = append(problems, checkName(nameField, req.Name)...)
	}
	if raw := fields["expires_in"]; !isAbsent(raw) {
		seconds, ok := wholeNumber(raw)
		req.ExpiresIn = time.Duration(seconds) * time.Second
		if !ok || !validTTL(req.ExpiresIn) {
			problems = append(problems, expiresInProblem())
		}
	}
	if len(problems) > 0 {
		return SessionRequest{}, &domain.ValidationError{Message: "the session request is invalid", Fields: problems}
	}
	req.Name = strings.TrimSpace(req.Name)
	return req, nil
}

// validate checks a request built in Go, where ExpiresIn 0 means the default and
// Name "" the whole account.
func (req SessionRequest) validate() error {
	var problems []domain.FieldError
	if req.Name != "" {
		problems = checkName("name", req.Name)
	}
	if req.ExpiresIn != 0 && !validTTL(req.ExpiresIn) {
		problems = append(problems, expiresInProblem())
	}
	if len(problems) > 0 {
		return &domain.ValidationError{Message: "the session request is invalid", Fields: problems}
	}
	return nil
}

func checkName(field, name string) []domain.FieldError {
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > domain.MaxNameLength || !utf8.ValidString(name) {
		return []domain.FieldError{{Field: field, Message: fmt.Sprintf("must be 1 to %d characters after trimming spaces", domain.MaxNameLength)}}
	}
	return nil
}

func validTTL(d time.Duration) bool {
	return d >= MinSessionTTL && d <= MaxSessionTTL && d%time.Second == 0
}

func expiresInProblem() domain.FieldError {
	return domain.FieldError{Field: "expires_in", Message: fmt.Sprintf("must be a whole number of seconds from %d to %d",
		int64(MinSessionTTL/time.Second), int64(MaxSessionTTL/time.Second))}
}

// wholeNumber reads a JSON number without a fractional part (3600 or 3600.0, not
// "3600" or 1.5); huge values are refused before they could overflow a Duration.
func wholeNumber(raw json.RawMessage) (int64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1e12 {
		return 0, false
	}
	return int64(f), true
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

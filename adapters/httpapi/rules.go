package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// maxRulesBody bounds a rule set's body: the bounds of a set
// (rules.MaxRules of each kind) fit in well under it, and a set far over
// them still reads, to be refused naming its list.
const maxRulesBody = 4 << 20

// Page sizes of the rule set history.
const (
	defaultRulesPage = 20
	maxRulesPage     = 100
)

// rulesRoutes registers the rule set's endpoints.
func (a *api) rulesRoutes(r *mux.Router) {
	route := func(path string, h http.HandlerFunc, methods ...string) {
		r.Handle(path, a.authenticate(a.rateLimit(a.withRules(h)))).Methods(methods...)
	}
	route("/v1/rules", a.getRules, readMethods()...)
	route("/v1/rules", a.putRules, http.MethodPut)
	route("/v1/rules/history", a.rulesHistory, readMethods()...)
	route("/v1/rules/try", a.tryRules, http.MethodPost)
}

// withRules answers 404 when the service has no rule sets.
func (a *api) withRules(next http.HandlerFunc) http.HandlerFunc {
	return onlyIf(a.rules != nil, "rule sets are not available on this server", next)
}

// failRules is fail with the rule sets' own words.
func (a *api) failRules(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ports.ErrForbidden):
		writeError(w, apiError{status: http.StatusForbidden,
			message: "rule sets are read and changed with an API key, not a portal session"})
	case errors.Is(err, app.ErrRuledByFile):
		writeError(w, apiError{status: http.StatusConflict,
			message: "a rules file (REQLOG_RULES_FILE) rules this account: change the file (each replica reads it again within REQLOG_RULES_POLL_INTERVAL), or take the account out of it"})
	case errors.Is(err, ports.ErrNotFound):
		writeError(w, apiError{status: http.StatusNotFound, message: "message not found"})
	default:
		a.fail(w, r, err)
	}
}

// rulesJSON is an account's rule set as GET /v1/rules shows it.
type rulesJSON struct {
	Version     int64         `json:"version"`
	Source      string        `json:"source"` // store or file
	FileVersion string        `json:"file_version,omitempty"`
	Rules       rules.RuleSet `json:"rules"`
	KeyID       string        `json:"key_id,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	SavedAt     string        `json:"saved_at,omitempty"`
}

func rulesOf(c app.CurrentRules) rulesJSON {
	out := rulesJSON{Version: c.Version.Number, Source: "store", FileVersion: c.FileVersion, Rules: c.Version.Rules,
		KeyID: c.Version.KeyID, Reason: c.Version.Reason}
	if c.FileVersion != "" {
		out.Source = "file"
	}
	if c.Version.Number > 0 {
		out.SavedAt = timestamp(c.Version.At)
	}
	return out
}

// rulesETag is the entity tag of c: its version, or the file's.
func rulesETag(c app.CurrentRules) string {
	if c.FileVersion != "" {
		return `"file-` + c.FileVersion + `"`
	}
	return `"` + strconv.FormatInt(c.Version.Number, 10) + `"`
}

func writeRules(w http.ResponseWriter, status int, message string, c app.CurrentRules) {
	w.Header().Set("ETag", rulesETag(c))
	writeJSON(w, status, reply{Status: true, Message: message, Data: rulesOf(c)})
}

func (a *api) getRules(w http.ResponseWriter, r *http.Request) {
	current, err := a.rules.Current(r.Context(), principalOf(r.Context()))
	if err != nil {
		a.failRules(w, r, err)
		return
	}
	writeRules(w, http.StatusOK, "rule set", current)
}

// ifMatchVersion reads If-Match: one strong entity tag of a version, "0"
// when none is saved. ok is false once it has answered.
func (a *api) ifMatchVersion(w http.ResponseWriter, r *http.Request) (int64, bool) {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		writeError(w, apiError{status: http.StatusPreconditionRequired,
			message: `send If-Match with the ETag of the version you changed (GET /v1/rules; "0" when there is none), so that no change is lost`})
		return 0, false
	}
	tag := strings.TrimSpace(values[0])
	n, err := strconv.ParseInt(strings.Trim(tag, `"`), 10, 64)
	if len(values) != 1 || len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' || err != nil || n < 0 {
		a.fail(w, r, &domain.ValidationError{Message: "the If-Match header is invalid", Fields: []domain.FieldError{{Field: "If-Match",
			Message: `must be one ETag of GET /v1/rules, a version in double quotes such as "3" ("0" when there is none)`}}})
		return 0, false
	}
	return n, true
}

// putRules replaces the rule set: the body is the set, If-Match its version
// and X-Reqlog-Reason why. Nothing changes unless all of them are right.
func (a *api) putRules(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := a.rules.Replaceable(p); err != nil {
		a.failRules(w, r, err)
		return
	}
	expected, ok := a.ifMatchVersion(w, r)
	if !ok {
		return
	}
	reason, err := app.ParseRuleReason(r.Header.Values(app.RuleReasonHeader)...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !requireJSON(w, r) || !a.declaresAtMost(w, r, maxRulesBody) {
		return
	}
	body, err := readBody(w, r, maxRulesBody, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, maxRulesBody, err)
		return
	}
	current, err := a.rules.Replace(r.Context(), p, body, reason, expected)
	if errors.Is(err, ports.ErrStale) {
		a.refuseStale(w, r, expected)
		return
	}
	if err != nil {
		a.failRules(w, r, err)
		return
	}
	writeRules(w, http.StatusOK, "rule set replaced: this server writes under it now, every replica within seconds", current)
}

// refuseStale answers 412 with the current version's ETag, when it can be read.
func (a *api) refuseStale(w http.ResponseWriter, r *http.Request, expected int64) {
	message := "the rule set is no longer at version " + strconv.FormatInt(expected, 10) +
		": GET it again, make your change on it and PUT it with its ETag"
	if current, err := a.rules.Current(r.Context(), principalOf(r.Context())); err == nil {
		w.Header().Set("ETag", rulesETag(current))
		message = "the rule set is at version " + strconv.FormatInt(current.Version.Number, 10) + ", not " +
			strconv.FormatInt(expected, 10) + ": GET it again, make your change on it and PUT it with its ETag"
	}
	writeError(w, apiError{status: http.StatusPreconditionFailed, message: message})
}

// ruleChangeJSON is one version of the history.
type ruleChangeJSON struct {
	Version int64            `json:"version"`
	KeyID   string           `json:"key_id"`
	SavedAt string           `json:"saved_at"`
	Reason  string           `json:"reason"`
	Diff    rules.Difference `json:"diff"`
}

func (a *api) rulesHistory(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	limit := int(q.integer("limit", 1, maxRulesPage, defaultRulesPage))
	before := q.integer("before", 1, 1<<62, 0)
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	changes, more, err := a.rules.History(r.Context(), principalOf(r.Context()), before, limit)
	if err != nil {
		a.failRules(w, r, err)
		return
	}
	page := alertPagination{Limit: limit, HasMore: more}
	if more {
		next := changes[len(changes)-1].Version.Number
		page.NextBefore = &next
	}
	out := make([]ruleChangeJSON, len(changes))
	for i, c := range changes {
		out[i] = ruleChangeJSON{Version: c.Version.Number, KeyID: c.Version.KeyID, SavedAt: timestamp(c.Version.At), Reason: c.Version.Reason, Diff: c.Diff}
	}
	writeJSON(w, http.StatusOK, alertPageReply{Status: true, Message: "rule set history", Data: out, Pagination: page})
}

// tryRequest is the body of POST /v1/rules/try.
type tryRequest struct {
	Rules     json.RawMessage `json:"rules"`
	Source    rules.Source    `json:"source"`
	Exchange  json.RawMessage `json:"exchange"`
	MessageID string          `json:"message_id"`
}

// tryReply is its reply's data; Message is encoded as GET
// /v1/messages/{id} encodes one, null when the message would not be stored.
type tryReply struct {
	Version int64           `json:"version"`
	Stored  bool            `json:"stored"`
	Message json.RawMessage `json:"message"`
	Outcome outcomeJSON     `json:"outcome"`
}

// outcomeJSON is what the rules did: rule ids and field paths, never the
// values they matched (subject hashes are counted, not shown).
type outcomeJSON struct {
	IngestRule     string         `json:"ingest_rule,omitempty"`
	SampleRate     int            `json:"sample_rate"`
	BodiesStripped bool           `json:"bodies_stripped"`
	RetentionRule  string         `json:"retention_rule,omitempty"`
	ExpiresAt      string         `json:"expires_at,omitempty"`
	BodiesExpireAt string         `json:"bodies_expire_at,omitempty"`
	Changes        []rules.Change `json:"changes"`
	Counts         []rules.Count  `json:"counts"`
	Withheld       []string       `json:"withheld"`
	Subjects       int            `json:"subjects"`
}

func (a *api) tryRules(w http.ResponseWriter, r *http.Request) {
	limit := a.maxBody + maxRulesBody
	if !requireJSON(w, r) || !a.declaresAtMost(w, r, limit) {
		return
	}
	body, err := readBody(w, r, limit, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, limit, err)
		return
	}
	in, err := decodeTry(body)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	got, err := a.rules.Try(r.Context(), principalOf(r.Context()), in)
	if err != nil {
		a.failRules(w, r, err)
		return
	}
	out := tryReply{Version: got.Version, Stored: got.Outcome.Stored, Message: json.RawMessage("null"), Outcome: outcomeJSON{
		IngestRule: got.Outcome.IngestRule, SampleRate: got.Outcome.SampleRate, BodiesStripped: got.Outcome.BodiesStripped,
		RetentionRule: got.Outcome.RetentionRule, Changes: orEmpty(got.Outcome.Changes), Counts: orEmpty(got.Outcome.Counts),
		Withheld: orEmpty(got.Outcome.Withheld), Subjects: len(got.Outcome.Subjects)}}
	if got.Outcome.Stored {
		out.Message = appendMessage(nil, got.Message)
		out.Outcome.ExpiresAt = timestamp(got.Message.ExpiresAt)
		if !got.Outcome.BodiesExpireAt.IsZero() {
			out.Outcome.BodiesExpireAt = timestamp(got.Outcome.BodiesExpireAt)
		}
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "what the rules would do; nothing was stored", Data: out})
}

// timestamp is t as the API writes times.
func timestamp(t time.Time) string { return t.UTC().Format(domain.TimeLayout) }

// orEmpty is list, or an empty one for nil: a list in a reply is never null.
func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// decodeTry reads a try body: unknown members, a source that is not one, or
// nothing to try on are refused naming the member.
func decodeTry(body []byte) (app.TryInput, error) {
	var req tryRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return app.TryInput{}, invalid("the request body is not a rule set trial (rules, source, exchange, message_id): %s", err)
	}
	in := app.TryInput{Source: req.Source, MessageID: req.MessageID}
	switch req.Source {
	case "", rules.SourceAPI, rules.SourceProxy, rules.SourceOTLP:
	default:
		return app.TryInput{}, &domain.ValidationError{Message: "the request body is invalid",
			Fields: []domain.FieldError{{Field: "source", Message: "must be api, proxy or otlp"}}}
	}
	if len(req.Rules) > 0 && !bytes.Equal(req.Rules, []byte("null")) {
		rs, err := rules.Parse(req.Rules)
		if err != nil {
			return app.TryInput{}, &domain.ValidationError{Message: "the rule set is invalid",
				Fields: []domain.FieldError{{Field: "rules", Message: err.Error()}}}
		}
		in.Rules = &rs
	}
	if len(req.Exchange) > 0 && !bytes.Equal(req.Exchange, []byte("null")) {
		drafts, err := DecodeSubmissions(req.Exchange, 2) // two, to tell one from many
		if err != nil {
			return app.TryInput{}, &domain.ValidationError{Message: "the exchange is invalid",
				Fields: []domain.FieldError{{Field: "exchange", Message: err.Error()}}}
		}
		in.Exchange = &drafts
	}
	return in, nil
}

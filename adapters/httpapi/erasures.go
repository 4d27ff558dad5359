package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

// maxErasureBody bounds an erasure request: erasure.MaxSubjects values of
// erasure.MaxSubjectBytes fit in it.
const maxErasureBody = 256 << 10

// erasureRoutes registers the erasures' endpoints (docs/erasure.md).
func (a *api) erasureRoutes(r *mux.Router) {
	route := func(path string, h http.HandlerFunc, methods ...string) {
		r.Handle(path, a.authenticate(a.rateLimit(a.withErasures(h)))).Methods(methods...)
	}
	route("/v1/erasures", a.createErasure, http.MethodPost)
	route("/v1/erasures", a.listErasures, readMethods()...)
	route("/v1/erasures/{erasureID}", a.getErasure, readMethods()...)
	route("/v1/subjects/messages", a.subjectMessages, readMethods()...)
}

// withErasures answers as the use case says before anything is read: 403
// for a portal session, 404 when the server cannot erase.
func (a *api) withErasures(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.erasures == nil {
			writeError(w, apiError{status: http.StatusNotFound, message: app.ErrNoErasures.Error()})
			return
		}
		if err := a.erasures.Available(principalOf(r.Context())); err != nil {
			a.failErasures(w, r, err)
			return
		}
		next(w, r)
	}
}

// failErasures is fail with the erasures' own words.
func (a *api) failErasures(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ports.ErrForbidden):
		writeError(w, apiError{status: http.StatusForbidden,
			message: "erasures are asked and read with an API key, not a portal session"})
	case errors.Is(err, app.ErrNoErasures):
		writeError(w, apiError{status: http.StatusNotFound, message: err.Error()})
	case errors.Is(err, app.ErrMessageNotFound):
		writeError(w, apiError{status: http.StatusNotFound, message: "message not found: message_id names no message of the account"})
	case errors.Is(err, ports.ErrNotFound):
		writeError(w, apiError{status: http.StatusNotFound, message: "erasure not found"})
	default:
		a.fail(w, r, err)
	}
}

// erasureJSON is an erasure's receipt: never the subjects' values nor
// their hashes.
type erasureJSON struct {
	ID        string            `json:"id"`
	State     erasure.State     `json:"state"`
	Future    string            `json:"future"`
	Reason    string            `json:"reason"`
	KeyID     string            `json:"key_id"`
	Subjects  int               `json:"subjects"`
	MessageID *string           `json:"message_id"`
	Messages  erasureCountsJSON `json:"messages"`
	// Partitions count per partition of the store: its names, never values.
	Partitions []erasurePartitionJSON `json:"partitions"`
	AskedAt    string                 `json:"asked_at"`
	HiddenAt   *string                `json:"hidden_at"`
	DeletedAt  *string                `json:"deleted_at"`
}

type erasureCountsJSON struct {
	Hidden    int64 `json:"hidden"`
	Deleted   int64 `json:"deleted"`
	Reapplied int64 `json:"reapplied"`
}

type erasurePartitionJSON struct {
	Partition string `json:"partition"`
	erasureCountsJSON
}

func countsOf(c erasure.Counts) erasureCountsJSON {
	return erasureCountsJSON{Hidden: c.Hidden, Deleted: c.Deleted, Reapplied: c.Reapplied}
}

func erasureOf(e erasure.Erasure) erasureJSON {
	future := string(e.Future)
	if future == "" {
		future = "keep"
	}
	optional := func(t interface{ IsZero() bool }, s string) *string {
		if t.IsZero() {
			return nil
		}
		return &s
	}
	partitions := make([]erasurePartitionJSON, len(e.Partitions))
	for i, p := range e.Partitions {
		partitions[i] = erasurePartitionJSON{Partition: p.Partition, erasureCountsJSON: countsOf(p.Counts)}
	}
	var messageID *string
	if e.Message != nil {
		messageID = &e.Message.ID
	}
	return erasureJSON{ID: e.ID, State: e.State, Future: future, Reason: e.Reason, KeyID: e.KeyID, Subjects: e.Subjects,
		MessageID: messageID, Messages: countsOf(e.Counts), Partitions: partitions, AskedAt: timestamp(e.At),
		HiddenAt: optional(e.HiddenAt, timestamp(e.HiddenAt)), DeletedAt: optional(e.DeletedAt, timestamp(e.DeletedAt))}
}

// createErasure erases the body's subjects: 202 with the receipt, the
// messages hidden; 200 with a count for a dry run.
func (a *api) createErasure(w http.ResponseWriter, r *http.Request) {
	if !requireJSON(w, r) || !a.declaresAtMost(w, r, maxErasureBody) {
		return
	}
	body, err := readBody(w, r, maxErasureBody, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, maxErasureBody, err)
		return
	}
	if err := refuseNullMembers(body); err != nil {
		a.fail(w, r, err)
		return
	}
	var req erasure.Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		a.fail(w, r, invalid("the request body is not an erasure request (subjects, message_id, future, reason, dry_run): %s", err))
		return
	}
	p := principalOf(r.Context())
	if req.DryRun {
		n, err := a.erasures.Count(r.Context(), p, req)
		if err != nil {
			a.failErasures(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, reply{Status: true, Message: "what the erasure would erase; nothing was changed",
			Data: map[string]any{"dry_run": true, "messages": n}})
		return
	}
	e, err := a.erasures.Erase(r.Context(), p, req)
	if err != nil {
		a.failErasures(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/erasures/"+e.ID)
	writeJSON(w, http.StatusAccepted, reply{Status: true,
		Message: "erasure accepted: no read returns its messages from now on; the erasure job hides, then deletes them", Data: erasureOf(e)})
}

func (a *api) getErasure(w http.ResponseWriter, r *http.Request) {
	e, err := a.erasures.Erasure(r.Context(), principalOf(r.Context()), mux.Vars(r)["erasureID"])
	if err != nil {
		a.failErasures(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "erasure", Data: erasureOf(e)})
}

// erasurePagination pages the audit list by id.
type erasurePagination struct {
	Limit      int     `json:"limit"`
	HasMore    bool    `json:"has_more"`
	NextBefore *string `json:"next_before,omitempty"`
}

func (a *api) listErasures(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	limit := int(q.integer("limit", 1, maxRulesPage, defaultRulesPage))
	before := values.Get("before")
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	es, more, err := a.erasures.List(r.Context(), principalOf(r.Context()), before, limit)
	if err != nil {
		a.failErasures(w, r, err)
		return
	}
	out := make([]erasureJSON, len(es))
	for i, e := range es {
		out[i] = erasureOf(e)
	}
	page := erasurePagination{Limit: limit, HasMore: more}
	if more {
		page.NextBefore = &es[len(es)-1].ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "erasures", "data": out, "pagination": page})
}

// subjectMessages lists the messages of a subject in the key's scope (an
// access request): value, limit and cursor, as GET /v1/messages pages.
func (a *api) subjectMessages(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q, err := domain.ParseQuery(values)
	if err == nil && q.Filter != (domain.Filter{}) {
		err = invalid("a subject's messages take value, limit and cursor alone")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.erasures.SubjectMessages(r.Context(), principalOf(r.Context()), values.Get("value"), q.After, q.Limit)
	if err != nil {
		a.failErasures(w, r, err)
		return
	}
	writeEncoded(w, http.StatusOK, func(dst []byte) []byte { return appendListReply(dst, page, q.Limit) })
}

// refuseNullMembers refuses a JSON object with a member set to null, which
// decoding would take for the member left out: a client that sends
// "dry_run": null meant something, and is told so rather than erased for.
func refuseNullMembers(body []byte) error {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil // not an object: the decoding says what is wrong
	}
	var fields []domain.FieldError
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if name != "" && string(bytes.TrimSpace(members[name])) == "null" { // "" is no member: the decoding refuses it
			fields = append(fields, domain.FieldError{Field: name, Message: "must not be null: leave it out for its default"})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return &domain.ValidationError{Message: "the erasure request has null members", Fields: fields}
}

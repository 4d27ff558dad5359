package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// maxRescrubBody bounds a re-scrub request: a range and at most
// rules.MaxRescrubApplications names.
const maxRescrubBody = 64 << 10

// rescrubRoutes registers the re-scrub jobs' endpoints.
func (a *api) rescrubRoutes(r *mux.Router) {
	route := func(path string, h http.HandlerFunc, methods ...string) {
		r.Handle(path, a.authenticate(a.rateLimit(a.withRescrubs(h)))).Methods(methods...)
	}
	route("/v1/rules/rescrub", a.startRescrub, http.MethodPost)
	route("/v1/rules/rescrub", a.listRescrubs, readMethods()...)
	route("/v1/rules/rescrub/{number}", a.getRescrub, readMethods()...)
	route("/v1/subjects/backfill", a.startBackfill, http.MethodPost)
}

// withRescrubs answers 404 when the service has no re-scrubs.
func (a *api) withRescrubs(next http.HandlerFunc) http.HandlerFunc {
	return onlyIf(a.rescrubs != nil, "re-scrubs are not available on this server", next)
}

// failRescrub is fail with the re-scrubs' own words.
func (a *api) failRescrub(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ports.ErrBusy):
		writeError(w, apiError{status: http.StatusConflict,
			message: "a re-scrub or backfill of this account is running: wait until it is done (GET /v1/rules/rescrub)"})
	case errors.Is(err, app.ErrRuledByFile):
		writeError(w, apiError{status: http.StatusConflict,
			message: "a rules file (REQLOG_RULES_FILE) rules this account: re-scrubs run the rule sets saved with PUT /v1/rules"})
	case errors.Is(err, ports.ErrForbidden):
		writeError(w, apiError{status: http.StatusForbidden,
			message: "re-scrubs are started and read with an API key, not a portal session"})
	case errors.Is(err, app.ErrNoBackfill):
		writeError(w, apiError{status: http.StatusNotFound, message: app.ErrNoBackfill.Error()})
	case errors.Is(err, ports.ErrNotFound):
		writeError(w, apiError{status: http.StatusNotFound, message: "re-scrub not found"})
	default:
		a.fail(w, r, err)
	}
}

// rescrubRequest is the body of POST /v1/rules/rescrub.
type rescrubRequest struct {
	From         *string  `json:"from"`
	To           *string  `json:"to"`
	Applications []string `json:"applications"`
}

// decodeRescrub reads a re-scrub request: unknown members refused, times as
// RFC 3339 or Unix seconds, each bad member named.
func decodeRescrub(body []byte) (app.RescrubRequest, error) {
	var req rescrubRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return app.RescrubRequest{}, invalid("the request body is not a re-scrub request (from, to, applications): %s", err)
	}
	var out app.RescrubRequest
	var fe domain.FieldErrors
	for _, bound := range []struct {
		name  string
		value *string
		into  *time.Time
	}{{"from", req.From, &out.From}, {"to", req.To, &out.To}} {
		if bound.value == nil {
			continue // ValidateRescrub names it
		}
		t, err := domain.ParseUnixOrRFC3339(*bound.value)
		if err != nil {
			fe.Add(bound.name, "%s", err)
			continue
		}
		*bound.into = t
	}
	if err := fe.Err("the re-scrub request is invalid"); err != nil {
		return app.RescrubRequest{}, err
	}
	out.Applications = req.Applications
	return out, nil
}

// rescrubJSON is a job as the API shows it.
type rescrubJSON struct {
	ID int64 `json:"id"`
	// Kind: rescrub, or subjects (a backfill of the subject index).
	Kind         string   `json:"kind"`
	State        string   `json:"state"`
	Version      int64    `json:"version"`
	From         string   `json:"from"`
	To           string   `json:"to"`
	Applications []string `json:"applications"`
	KeyID        string   `json:"key_id"`
	// Progress: the domain and created_at the job has read up to.
	Domain     string  `json:"domain"`
	ReadUpTo   *string `json:"read_up_to"`
	Scanned    int64   `json:"scanned"`
	Changed    int64   `json:"changed"`
	Skipped    int64   `json:"skipped"`
	Error      string  `json:"error,omitempty"`
	CreatedAt  string  `json:"created_at"`
	UpdatedAt  string  `json:"updated_at"`
	FinishedAt *string `json:"finished_at"`
}

func rescrubOf(j rules.RescrubJob) rescrubJSON {
	kind := string(j.Kind)
	if j.Kind == rules.KindRescrub {
		kind = "rescrub"
	}
	out := rescrubJSON{ID: j.Number, Kind: kind, State: string(j.State), Version: j.Version, From: timestamp(j.From), To: timestamp(j.To),
		Applications: orEmpty(j.Applications), KeyID: j.KeyID, Domain: j.Cursor.Domain, Scanned: j.Scanned, Changed: j.Changed,
		Skipped: j.Skipped, Error: j.Error, CreatedAt: timestamp(j.CreatedAt), UpdatedAt: timestamp(j.UpdatedAt)}
	if j.Cursor.ID != "" {
		at := timestamp(j.Cursor.CreatedAt)
		out.ReadUpTo = &at
	}
	if !j.FinishedAt.IsZero() {
		at := timestamp(j.FinishedAt)
		out.FinishedAt = &at
	}
	return out
}

// startRescrub starts a re-scrub: 202 with the job and its Location.
func (a *api) startRescrub(w http.ResponseWriter, r *http.Request) {
	a.startJob(w, r, a.rescrubs.Begin, "re-scrub started: it runs in the background; GET its Location for its progress")
}

// startBackfill starts a backfill of the subject index, a job as a
// re-scrub is: 202 with the job and its Location.
func (a *api) startBackfill(w http.ResponseWriter, r *http.Request) {
	a.startJob(w, r, a.rescrubs.BeginBackfill,
		"backfill of the subject index started: it runs in the background; GET its Location for its progress")
}

func (a *api) startJob(w http.ResponseWriter, r *http.Request,
	begin func(context.Context, domain.Principal, app.RescrubRequest) (rules.RescrubJob, error), started string) {
	if !requireJSON(w, r) || !a.declaresAtMost(w, r, maxRescrubBody) {
		return
	}
	body, err := readBody(w, r, maxRescrubBody, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, maxRescrubBody, err)
		return
	}
	req, err := decodeRescrub(body)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	job, err := begin(r.Context(), principalOf(r.Context()), req)
	if err != nil {
		a.failRescrub(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/rules/rescrub/"+strconv.FormatInt(job.Number, 10))
	writeJSON(w, http.StatusAccepted, reply{Status: true, Message: started, Data: rescrubOf(job)})
}

func (a *api) getRescrub(w http.ResponseWriter, r *http.Request) {
	number, err := strconv.ParseInt(mux.Vars(r)["number"], 10, 64)
	if err != nil || number < 1 {
		writeError(w, apiError{status: http.StatusNotFound, message: "re-scrub not found"})
		return
	}
	job, err := a.rescrubs.Job(r.Context(), principalOf(r.Context()), number)
	if err != nil {
		a.failRescrub(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "re-scrub", Data: rescrubOf(job)})
}

func (a *api) listRescrubs(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	limit := int(q.integer("limit", 1, maxRulesPage, defaultRulesPage))
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	jobs, err := a.rescrubs.Jobs(r.Context(), principalOf(r.Context()), limit)
	if err != nil {
		a.failRescrub(w, r, err)
		return
	}
	out := make([]rescrubJSON, len(jobs))
	for i, j := range jobs {
		out[i] = rescrubOf(j)
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "re-scrubs, newest first", Data: out})
}

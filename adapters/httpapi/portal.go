package httpapi

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// maxSessionBody bounds a session request, which holds a name and a number.
const maxSessionBody = 16 << 10

// Reply texts of the portal endpoints.
const (
	msgSessionCreated  = "portal session created"
	msgDashboardAccess = "portal link created"
)

var errPortalDisabled = apiError{status: http.StatusNotFound, message: "the customer portal is not enabled on this server"}

type portalSessionJSON struct {
	Token     string `json:"token"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
}

// dashboardAccessReply is what the existing client SDKs read: the link at the top.
type dashboardAccessReply struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	URL     string `json:"url"`
}

// createPortalSession answers POST /v1/portal/sessions.
func (a *api) createPortalSession(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.issuePortalSession(w, r); ok {
		writeJSON(w, http.StatusOK, reply{Status: true, Message: msgSessionCreated, Data: portalSessionJSON{
			Token: s.Token, URL: s.URL, ExpiresAt: domain.FormatTime(s.ExpiresAt)}})
	}
}

// dashboardAccess answers POST /v1/dashboard_access, the call the existing client
// SDKs for this API make to get a portal link.
func (a *api) dashboardAccess(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.issuePortalSession(w, r); ok {
		writeJSON(w, http.StatusOK, dashboardAccessReply{Status: true, Message: msgDashboardAccess, URL: s.URL})
	}
}

// issuePortalSession checks, in order: that the portal is on, permission, content
// type, body size, then the body; it answers every failure itself.
func (a *api) issuePortalSession(w http.ResponseWriter, r *http.Request) (portal.Session, bool) {
	if a.portal == nil {
		writeError(w, errPortalDisabled)
		return portal.Session{}, false
	}
	principal := principalOf(r.Context())
	if err := a.portal.Authorize(principal); err != nil {
		a.failPortal(w, r, err)
		return portal.Session{}, false
	}
	// A POST without a body (curl -X POST) asks for the defaults: it needs no
	// Content-Type.
	if r.ContentLength != 0 && !requireJSON(w, r) || !a.declaresAtMost(w, r, maxSessionBody) {
		return portal.Session{}, false
	}
	body, err := readBody(w, r, maxSessionBody, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, maxSessionBody, err)
		return portal.Session{}, false
	}
	req, err := portal.ParseSessionRequest(body)
	if err != nil {
		a.fail(w, r, err)
		return portal.Session{}, false
	}
	s, err := a.portal.CreateSession(principal, req, r)
	if err != nil {
		a.failPortal(w, r, err)
		return portal.Session{}, false
	}
	return s, true
}

// failPortal is fail with the portal's own words for a forbidden request.
func (a *api) failPortal(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ports.ErrForbidden) {
		writeError(w, apiError{status: http.StatusForbidden,
			message: "a portal session cannot create portal sessions: use an API key"})
		return
	}
	a.fail(w, r, err)
}

// portalPage serves the portal page (GET /portal) and its assets; no key is
// needed, the page brings its token in the URL fragment.
func (a *api) portalPage(w http.ResponseWriter, r *http.Request) {
	switch {
	case a.portal == nil:
		writeError(w, errPortalDisabled)
	case !portal.Serves(r.URL.Path):
		notFound(w, r)
	default:
		a.portal.ServeHTTP(w, r)
	}
}

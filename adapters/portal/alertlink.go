package portal

import (
	"net/url"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.PortalLinker = (*Portal)(nil)

// PortalLink is the portal page at the configured public URL with view as its
// query (the filters of the requests an alert is about) and, when expires is
// set, a read-only session of principal's scope (and application) until then
// in its fragment. Without a public URL there is no link ("").
func (p *Portal) PortalLink(principal domain.Principal, view url.Values, expires time.Time) string {
	return p.Link(p.publicURL, principal, view, expires)
}

// Link is PortalLink on base (scheme and host, without a trailing slash) when
// no public URL is configured; "" when there is neither.
func (p *Portal) Link(base string, principal domain.Principal, view url.Values, expires time.Time) string {
	link := p.pageURL(base)
	if link == "" {
		return ""
	}
	if q := view.Encode(); q != "" {
		link += "?" + q
	}
	if expires.IsZero() {
		return link
	}
	token, _, err := p.signer.Issue(principal.Scope, principal.Name, expires)
	if err != nil {
		return link
	}
	return link + "#token=" + token
}

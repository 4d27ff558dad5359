package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRouteLength is the longest route template, in characters.
const MaxRouteLength = 256

// routeProblem says what is wrong with route as a template the server matched
// ("/orders/{id}/pay"), or "" when nothing is. A template is a path without
// its query or fragment: a "?" or "#" means a raw URL was sent, which would
// rank ids as noise. Control characters are refused because a template is
// shown in the portal and logs as it is.
func routeProblem(route string) string {
	switch {
	case route == "":
		return "must not be empty"
	case route[0] != '/':
		return "must start with /"
	case strings.ContainsAny(route, "?#"):
		return "must be a route template without a query string or fragment (no ? or #)"
	case !utf8.ValidString(route):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(route) > MaxRouteLength:
		return "must be at most 256 characters"
	case strings.IndexFunc(route, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// ValidRoute reports whether route is a template a submission may carry.
func ValidRoute(route string) bool { return routeProblem(route) == "" }

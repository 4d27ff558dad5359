package domain

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRouteValidation(t *testing.T) {
	batch := mustParse(t, "["+validItem("route", `"/orders/{id}/pay"`)+","+validItem("route", "null")+","+validItem()+"]")
	if got := []string{batch.Submissions[0].Route, batch.Submissions[1].Route, batch.Submissions[2].Route}; !slices.Equal(got, []string{"/orders/{id}/pay", "", ""}) {
		t.Errorf("routes = %q, want the template, then none for null and absent", got)
	}
	if got := mustParse(t, validItem("route", `"/`+strings.Repeat("é", MaxRouteLength-1)+`"`)).Submissions[0].Route; len([]rune(got)) != MaxRouteLength {
		t.Errorf("a route of %d characters came back as %q", MaxRouteLength, got)
	}
	for name, value := range map[string]string{
		"empty": `""`, "relative": `"orders/{id}"`, "query": `"/orders?id=1"`, "fragment": `"/orders#top"`,
		"long": `"/` + strings.Repeat("é", MaxRouteLength) + `"`, "newline": `"/orders\n"`, "nul": `"/a\u0000"`,
		"C1 control": `"/a\u0085"`, "number": `7`, "object": `{}`,
	} {
		_, err := parse(t, "["+validItem()+","+validItem("route", value)+"]")
		assertFields(t, err, "[1].route")
		text, unquoteErr := strconv.Unquote(value)
		if _, err := ParseQuery(url.Values{"route": {text}}); unquoteErr == nil && !isFieldError(err, "route") {
			t.Errorf("%s: the route filter %s: %v, want an error on route", name, value, err)
		}
	}
	q, err := ParseQuery(url.Values{"route": {"/orders/{id}"}})
	if err != nil || q.Filter.Route != "/orders/{id}" {
		t.Errorf("route filter: %+v, %v", q.Filter, err)
	}
}

func isFieldError(err error, field string) bool {
	var verr *ValidationError
	return errors.As(err, &verr) && len(verr.Fields) == 1 && verr.Fields[0].Field == field
}

func TestRouteFilterMatchesExactly(t *testing.T) {
	f := Filter{Route: "/orders/{id}"}
	for route, want := range map[string]bool{"/orders/{id}": true, "": false, "/orders/{id}/pay": false, "/orders/{ID}": false} {
		if got := f.Matches(Message{Route: route, Path: "/orders/{id}"}); got != want {
			t.Errorf("route %q: Matches = %v, want %v", route, got, want)
		}
	}
}

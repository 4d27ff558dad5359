package rules

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// ingestRule is a compiled IngestRule.
type ingestRule struct {
	id                       string
	scope                    scope
	statuses                 [][2]int // inclusive ranges
	minDuration, maxDuration *time.Duration
	header                   *HeaderIs
	headerKey                string
	action                   string
	sampleRate               int
	dryRun                   bool
}

func compileIngest(fe *domain.FieldErrors, field string, r IngestRule) (ingestRule, bool) {
	before := len(fe.List)
	p := ingestRule{id: r.ID, scope: compileScope(fe, field, r.Scope), header: r.Header, action: r.Action, dryRun: compileMode(fe, field, r.Mode)}
	for i, s := range r.Status {
		lo, hi, ok := parseStatusRange(s)
		if !ok {
			fe.Add(fmt.Sprintf("%s.status[%d]", field, i), "must be a code (404), a class (5xx) or a range (400-403) within 100 to 599")
			continue
		}
		p.statuses = append(p.statuses, [2]int{lo, hi})
	}
	for name, ms := range map[string]*float64{"min_duration_ms": r.MinDurationMS, "max_duration_ms": r.MaxDurationMS} {
		if ms == nil {
			continue
		}
		if *ms < 0 || *ms > float64(domain.MaxDuration.Milliseconds()) {
			fe.Add(field+"."+name, "must be 0 to %d", domain.MaxDuration.Milliseconds())
			continue
		}
		d := time.Duration(*ms * float64(time.Millisecond))
		if name == "min_duration_ms" {
			p.minDuration = &d
		} else {
			p.maxDuration = &d
		}
	}
	if r.Header != nil {
		if !domain.IsToken(r.Header.Name) {
			fe.Add(field+".header.name", "must be a header name")
		}
		p.headerKey = domain.CanonicalHeaderName(r.Header.Name)
	}
	switch r.Action {
	case IngestKeep, IngestDrop, IngestStripBodies:
		if r.SampleRate != 0 {
			fe.Add(field+".sample_rate", "is for sample alone")
		}
	case IngestSample:
		if r.SampleRate < 2 || r.SampleRate > MaxSampleRate {
			fe.Add(field+".sample_rate", "must be 2 to %d (keep 1 in sample_rate)", MaxSampleRate)
		}
		p.sampleRate = r.SampleRate
	default:
		fe.Add(field+".action", "must be keep, drop, sample or strip_bodies")
	}
	if r.Action == IngestDrop && !p.dryRun && isEmpty(r.Scope) && len(r.Status) == 0 && r.MinDurationMS == nil && r.MaxDurationMS == nil && r.Header == nil {
		fe.Add(field, "drops every exchange: narrow it (scope, status, duration, header), sample instead, or set mode dry_run")
	}
	return p, len(fe.List) == before
}

func isEmpty(s Scope) bool {
	return len(s.Domains)+len(s.Applications)+len(s.Methods)+len(s.Paths)+len(s.Routes)+len(s.Sources) == 0
}

// parseStatusRange reads "404", "5xx" or "400-403".
func parseStatusRange(s string) (lo, hi int, ok bool) {
	if len(s) == 3 && strings.HasSuffix(s, "xx") && s[0] >= '1' && s[0] <= '5' {
		lo = int(s[0]-'0') * 100
		return lo, lo + 99, true
	}
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	return lo, hi, err1 == nil && err2 == nil && lo >= 100 && hi <= 599 && lo <= hi
}

// matches reports whether the rule holds m, captured by src. A rule that
// names no status leaves errors (status 400 and more) alone unless it keeps.
func (r *ingestRule) matches(m *domain.Message, src Source) bool {
	if !r.scope.matches(m, src) {
		return false
	}
	if len(r.statuses) == 0 {
		if r.action != IngestKeep && m.StatusCode >= 400 {
			return false
		}
	} else if !containsStatus(r.statuses, m.StatusCode) {
		return false
	}
	if r.minDuration != nil && (!m.HasDuration || m.Duration < *r.minDuration) ||
		r.maxDuration != nil && (!m.HasDuration || m.Duration > *r.maxDuration) {
		return false
	}
	if r.header != nil {
		values, ok := m.Request.Header[r.headerKey]
		if !ok || r.header.Value != nil && !containsString(values, *r.header.Value) {
			return false
		}
	}
	return true
}

func containsStatus(ranges [][2]int, code int) bool {
	for _, r := range ranges {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}

func containsString(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// sampled reports whether the message with id is the one in rate kept: by a
// hash of its id, so that a retried submission gets the same verdict.
func sampled(id string, rate int) bool {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()%uint64(rate) == 0
}

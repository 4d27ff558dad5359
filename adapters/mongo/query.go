package mongo

import (
	"regexp"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/domain"
)

// listFilter translates q into a query the page indexes serve: the scope and the
// exact filters by equality, then ranges, then the keyset condition. It reports
// false when no message can match, so no query need be sent.
func listFilter(q domain.Query, now time.Time) (bson.D, bool) {
	f := q.Filter
	filter := append(scopeFilter(q.Scope), readableAt(now)...)
	equal := func(field, value string) {
		if value != "" {
			filter = append(filter, bson.E{Key: field, Value: value})
		}
	}
	equal(fieldName, f.Name)
	equal(fieldMethod, f.Method)
	equal(fieldIP, f.IPAddress)
	equal(fieldTemplate, f.Route)
	switch {
	case f.Path != "" && f.PathPrefix != "" && !strings.HasPrefix(f.Path, f.PathPrefix):
		return nil, false
	case f.Path != "":
		equal(fieldPath, f.Path) // implies the prefix, if one is set
	case f.PathPrefix != "":
		// Anchored and case-sensitive: MongoDB answers it from an index range.
		filter = append(filter, bson.E{Key: fieldPath, Value: bson.Regex{Pattern: prefixPattern(f.PathPrefix)}})
	}

	if f.Text != "" {
		filter = append(filter, searchFilter(f.Text, now))
	}
	if f.HasDurationBounds() {
		filter = append(filter, durationFilter(f.MinDuration, f.MaxDuration))
	}
	if f.Hidden != nil {
		// No message indexed under a hidden subject; a tally stays.
		filter = append(filter, bson.E{Key: "$nor", Value: bson.A{bson.D{
			{Key: fieldSubjects, Value: bson.D{{Key: "$in", Value: f.Hidden.Hashes}}}, notTally}}})
	}

	var status bson.D
	if f.StatusMin != 0 {
		status = append(status, bson.E{Key: "$gte", Value: int32(f.StatusMin)})
	}
	if f.StatusMax != 0 {
		status = append(status, bson.E{Key: "$lte", Value: int32(f.StatusMax)})
	}
	if len(status) > 0 {
		filter = append(filter, bson.E{Key: fieldStatus, Value: status})
	}

	// Stored times are whole microseconds: rounding a finer bound up keeps
	// [From, To) exactly as domain.Filter.Matches reads it.
	var created bson.D
	if !f.From.IsZero() {
		created = append(created, bson.E{Key: "$gte", Value: roundUp(f.From, time.Microsecond).UnixMicro()})
	}
	if !f.To.IsZero() {
		created = append(created, bson.E{Key: "$lt", Value: roundUp(f.To, time.Microsecond).UnixMicro()})
	}
	if q.After != nil {
		// Keyset: strictly after (createdAt, _id) in newest-first order. The $lte
		// bounds the index scan; the $or picks the exact position.
		at := q.After.CreatedAt.UnixMicro()
		created = append(created, bson.E{Key: "$lte", Value: at})
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: fieldCreatedAt, Value: bson.D{{Key: "$lt", Value: at}}}},
			bson.D{{Key: fieldCreatedAt, Value: at}, {Key: fieldID, Value: bson.D{{Key: "$lt", Value: q.After.ID}}}},
		}})
	}
	if len(created) > 0 {
		filter = append(filter, bson.E{Key: fieldCreatedAt, Value: created})
	}
	return filter, true
}

// notTally leaves out the tallies (what ingest rules dropped, tally: true),
// which only the statistics count: every read but Stats adds it.
var notTally = bson.E{Key: fieldTally, Value: bson.D{{Key: "$ne", Value: true}}}

// scopeFilter selects one tenant's messages.
func scopeFilter(scope domain.Scope) bson.D {
	return bson.D{{Key: fieldAccount, Value: scope.Account}, {Key: fieldDomain, Value: scope.Domain}}
}

// readableAt selects messages readable at now: VisibleAt <= now < ExpiresAt.
// Truncating now to whole microseconds keeps both comparisons exact.
func readableAt(now time.Time) bson.D {
	us := now.UnixMicro()
	return bson.D{
		{Key: fieldVisibleAt, Value: bson.D{{Key: "$lte", Value: us}}},
		{Key: fieldExpiresAt, Value: bson.D{{Key: "$gt", Value: us}}},
	}
}

// prefixPattern matches strings that start with prefix. A BSON regex cannot hold
// a NUL byte, so NUL is written as the escape \x00, which both MongoDB's PCRE
// and FerretDB's Go regexp read.
func prefixPattern(prefix string) string { return "^" + quotePattern(prefix) }

// quotePattern is a regex matching s literally.
func quotePattern(s string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(s), "\x00", `\x00`)
}

// roundUp rounds t up to a multiple of unit.
func roundUp(t time.Time, unit time.Duration) time.Time {
	down := t.Truncate(unit)
	if down.Before(t) {
		return down.Add(unit)
	}
	return down
}

// searchFilter finds q, case-insensitively, as a substring of the path, either
// body while its bodies are readable at now (no bodiesExpireAt, or one after
// now: bodies past theirs are no longer read, before the purge empties them)
// or any header value (never a name: a regex on headers.values reaches each
// value of every header). A substring search meets the contract: every
// occurrence on word boundaries is a substring, and no substring is no match.
// The regex is unanchored, so it scans: no index serves it, but the rest of the
// filter (scope, range) narrows what it scans.
func searchFilter(q string, now time.Time) bson.E {
	pattern := bson.Regex{Pattern: quotePattern(q), Options: "i"}
	bodiesReadable := bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldBodiesExpireAt, Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: fieldBodiesExpireAt, Value: bson.D{{Key: "$gt", Value: now.UnixMicro()}}}},
	}}
	var texts bson.A
	for _, field := range []string{
		fieldPath,
		fieldRequest + "." + fieldHeaders + "." + fieldHeaderValues,
		fieldResponse + "." + fieldHeaders + "." + fieldHeaderValues,
	} {
		texts = append(texts, bson.D{{Key: field, Value: pattern}})
	}
	for _, field := range []string{fieldRequest + "." + fieldBody, fieldResponse + "." + fieldBody} {
		texts = append(texts, bson.D{{Key: field, Value: pattern}, bodiesReadable})
	}
	// Under $and: the keyset condition holds the filter's one top-level $or.
	return bson.E{Key: "$and", Value: bson.A{bson.D{{Key: "$or", Value: texts}}}}
}

// durationFilter bounds the duration inclusively; a document without one has
// no durationMicros and fails any comparison, so it is excluded. Stored
// durations are whole microseconds: min rounds up and max down without
// changing what matches.
func durationFilter(least, most *time.Duration) bson.E {
	var bounds bson.D
	if least != nil {
		bounds = append(bounds, bson.E{Key: "$gte", Value: int64((*least + time.Microsecond - 1) / time.Microsecond)})
	}
	if most != nil {
		bounds = append(bounds, bson.E{Key: "$lte", Value: int64(*most / time.Microsecond)})
	}
	return bson.E{Key: fieldDuration, Value: bounds}
}

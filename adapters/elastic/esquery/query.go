package esquery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// object is a JSON object of the query DSL.
type object = map[string]any

// pageReader fills a page from a search reply's hits.hits while it reads them
// (domain.FillPage), and stops reading where the page ends: a page of large
// messages costs no more memory than the page.
type pageReader struct {
	limit  int
	page   domain.Page
	badHit error // a hit that is not a stored message
}

// maxPresized bounds the messages a page is sized for before its hits are
// read: a page is usually full, but Lookup may ask for a thousand ids.
const maxPresized = 100

// errPageRead ends the reading of a reply once the page is full.
var errPageRead = errors.New("page read")

// DecodeReply reads the hits of a search reply into the page.
func (p *pageReader) DecodeReply(r io.Reader) error {
	if encodingJSONReplies {
		return p.decodeWithEncodingJSON(r)
	}
	w := esclient.NewReplyReader(r)
	defer w.Release()
	err := w.Object(func(key string) error {
		if key != "hits" {
			return w.Skip()
		}
		return w.Object(func(key string) error {
			if key != "hits" {
				return w.Skip()
			}
			return p.readHits(w)
		})
	})
	if errors.Is(err, errPageRead) {
		return nil
	}
	return err
}

func (p *pageReader) readHits(w *esclient.ReplyReader) error {
	if err := w.ArrayStart(); err != nil {
		return err
	}
	first := true
	more := func() bool {
		m := w.More(first)
		first = false
		return m
	}
	var sources esdoc.Sources
	var syntax error
	p.page, p.badHit = domain.FillPage(p.limit, min(p.limit, maxPresized), more, func() (domain.Message, error) {
		var rec record.Record
		syntax = w.Object(func(key string) error {
			if key != "_source" {
				return w.Skip()
			}
			return sources.Read(w, &rec)
		})
		if syntax != nil {
			return domain.Message{}, syntax
		}
		if err := w.Refused(); err != nil {
			return domain.Message{}, err
		}
		return rec.Message(), nil
	})
	if syntax != nil {
		return syntax
	}
	if err := w.Err(); err != nil {
		// More answers false on a read error too: a reply cut short.
		return err
	}
	return errPageRead
}

// newestFirst is List's order; the nanosecond format makes the sort values,
// and so search_after, exact strings rather than longs near 2^63.
var newestFirst = []object{
	{"created_at": object{"order": "desc", "format": "strict_date_optional_time_nanos"}},
	{"id": object{"order": "desc"}},
}

// filters collects bool.filter clauses. A condition that no stored message can
// meet (a bound outside date_nanos' range) marks the whole query empty instead
// of being sent, since Elasticsearch refuses such dates.
type filters struct {
	clauses []object
	empty   bool
	// tallies selects the tallies (what ingest rules dropped) instead of
	// the messages every other search is of.
	tallies bool
	// now, when set, is the time read at: a q finds no word in bodies
	// expired by then (bodies_expire_at).
	now time.Time
}

func (f *filters) term(field, value string) {
	f.clauses = append(f.clauses, object{"term": object{field: value}})
}

func (f *filters) add(clause object) { f.clauses = append(f.clauses, clause) }

// bound keeps field op t, op one of gt, gte, lt, lte. Outside date_nanos'
// range the bound either holds for every stored time (left out) or for none.
func (f *filters) bound(field, op string, t time.Time) {
	lower := op == "gt" || op == "gte"
	switch {
	case t.Before(esdoc.MinStorableTime):
		f.empty = f.empty || !lower
	case t.After(esdoc.MaxStorableTime):
		f.empty = f.empty || lower
	default:
		f.addBound(field, op, esdoc.QueryTime(t))
	}
}

// closeRange bounds field on both sides, with the storable range where f
// leaves a side open (see addBound).
func (f *filters) closeRange(field string) {
	var bounds object
	for _, c := range f.clauses {
		if r, ok := c["range"].(object); ok {
			if b, ok := r[field].(object); ok {
				bounds = b
			}
		}
	}
	if bounds["gt"] == nil && bounds["gte"] == nil {
		f.addBound(field, "gte", esdoc.QueryTime(esdoc.MinStorableTime))
	}
	if bounds["lt"] == nil && bounds["lte"] == nil {
		f.addBound(field, "lte", esdoc.QueryTime(esdoc.MaxStorableTime))
	}
}

// splitRange turns the range clause on field, closed on both sides by
// closeRange, into two clauses each closed by the storable range on the side
// it left open: [lower, max] and [min, upper]. Elasticsearch rewrites a range
// that holds every value of a shard to match_all before it looks the request
// up in its shard request cache, so a shard lying wholly before the upper
// bound (every past day, where to is now) sees the same request as long as
// the lower bound stays put, and answers it from the cache.
func (f *filters) splitRange(field string) {
	for i, c := range f.clauses {
		r, ok := c["range"].(object)
		if !ok {
			continue
		}
		bounds, ok := r[field].(object)
		if !ok {
			continue
		}
		lower, upper := object{"lte": esdoc.QueryTime(esdoc.MaxStorableTime)}, object{"gte": esdoc.QueryTime(esdoc.MinStorableTime)}
		for op, v := range bounds {
			switch op {
			case "gt", "gte":
				lower[op] = v
			default:
				upper[op] = v
			}
		}
		f.clauses[i] = object{"range": object{field: lower}}
		f.add(object{"range": object{field: upper}})
		return
	}
}

// addBound adds op to the range clause on field, creating it if needed: one
// clause holding both bounds lets a date_histogram over the field see the
// range whole (it fails on a date_nanos range open on one side).
func (f *filters) addBound(field, op string, value any) {
	for _, c := range f.clauses {
		if r, ok := c["range"].(object); ok {
			if bounds, ok := r[field].(object); ok {
				bounds[op] = value
				return
			}
		}
	}
	f.add(object{"range": object{field: object{op: value}}})
}

// readable keeps scope's messages readable at now: VisibleAt <= now < ExpiresAt.
func readable(scope domain.Scope, now time.Time) *filters {
	f := &filters{now: now}
	f.term("account", scope.Account)
	f.term("domain", scope.Domain)
	f.bound("visible_at", "lte", now)
	f.bound("expires_at", "gt", now)
	return f
}

// matching adds q's filter. Terms on keywords are exact and case-sensitive;
// the IP matches on its keyword sub-field, because the ip type equates an IPv4
// address with its IPv4-mapped IPv6 form.
func (f *filters) matching(filter domain.Filter) {
	for _, t := range []struct{ field, value string }{
		{"name", filter.Name}, {"method", filter.Method}, {"ip_address.keyword", filter.IPAddress}, {"path", filter.Path},
		{record.JSONRouteTemplate, filter.Route},
	} {
		if t.value != "" {
			f.term(t.field, t.value)
		}
	}
	if filter.PathPrefix != "" {
		f.add(object{"prefix": object{"path": object{"value": filter.PathPrefix}}})
	}
	if filter.StatusMin != 0 || filter.StatusMax != 0 {
		bounds := object{}
		if filter.StatusMin != 0 {
			bounds["gte"] = filter.StatusMin
		}
		if filter.StatusMax != 0 {
			bounds["lte"] = filter.StatusMax
		}
		f.add(object{"range": object{"status_code": bounds}})
	}
	if !filter.From.IsZero() {
		f.bound("created_at", "gte", filter.From)
	}
	if !filter.To.IsZero() {
		f.bound("created_at", "lt", filter.To)
	}
	if filter.HasDurationBounds() {
		bounds := object{}
		if filter.MinDuration != nil {
			bounds["gte"] = durationMS(*filter.MinDuration)
		}
		if filter.MaxDuration != nil {
			bounds["lte"] = durationMS(*filter.MaxDuration)
		}
		// A message without a duration has no value, so no range holds it.
		f.add(object{"range": object{record.JSONDuration: bounds}})
	}
	if filter.Text != "" {
		f.add(searchClause(filter.Text, f.now))
	}
	if filter.Hidden != nil {
		// No message indexed under a hidden subject; a tally stays.
		hidden := object{"bool": object{"filter": object{"terms": object{"subjects": filter.Hidden.Hashes}}, "must_not": notTally}}
		f.add(object{"bool": object{"must_not": hidden}})
	}
}

// searchedFields are the full-text fields q searches: the texts indexed where
// the record stores them, and the full-text field of the indices created
// before that (legacyMappings). A field an index lacks matches nothing there.
var searchedFields = []string{
	"path.text", "request.body", "response.body", "request.header.values", "response.header.values", "text",
}

// searchClause matches q as a phrase in any searched field. The standard
// analyzer splits q into words as it split the texts; the phrase keeps them
// consecutive, within one text: each field is a text of its own, and so is
// each value of an array (position_increment_gap). A body matches only
// while its bodies have not expired at now (when set): no read returns them
// from bodies_expire_at on, though they stay indexed until the purge. So
// does the full-text field, which holds the bodies too (a document created
// before its index's layout was known carries it: esdoc.AppendCreate); its
// path and headers are searched in their own fields there.
func searchClause(q string, now time.Time) object {
	phrases := make([]object, len(searchedFields))
	for i, field := range searchedFields {
		phrases[i] = object{"match_phrase": object{field: object{"query": q}}}
		if holdsBodies := field == "request.body" || field == "response.body" || field == "text"; holdsBodies && !now.IsZero() {
			expired := object{"range": object{record.JSONBodiesExpireAt: object{"lte": esdoc.QueryTime(now)}}}
			phrases[i] = object{"bool": object{"filter": phrases[i], "must_not": expired}}
		}
	}
	return object{"bool": object{"should": phrases, "minimum_should_match": 1}}
}

// durationMS is d in milliseconds: the double a document of duration d
// stores (record.DurationMicros writes float64(µs)/1000 in its shortest
// form, which parses back to the same double), so bounds compare exactly.
func durationMS(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// List runs one search over every daily index: the filters, newest first, from
// after the cursor (search_after), one message more than the page to learn
// HasMore.
func (s *Queries) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if err := ctx.Err(); err != nil {
		return domain.Page{}, fmt.Errorf("elastic: list: %w", err)
	}
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("elastic: list: limit must be at least 1, got %d", q.Limit)
	}
	f := readable(q.Scope, now)
	f.matching(q.Filter)
	body := object{"size": q.Limit + 1, "sort": newestFirst}
	if q.After != nil {
		if after, ok := searchAfter(*q.After, f); ok {
			body["search_after"] = after
		}
	}
	if f.empty {
		return domain.Page{}, nil
	}
	page, err := s.search(ctx, "list", f, body, q.Limit)
	for i := range page.Messages {
		page.Messages[i] = page.Messages[i].WithoutExpiredBodies(now)
	}
	return page, err
}

// searchAfter is the search_after of cursor c; ok is false when every stored
// message lies after c, and f is marked empty when none does.
func searchAfter(c domain.Cursor, f *filters) (after []string, ok bool) {
	switch {
	case c.CreatedAt.After(esdoc.MaxStorableTime):
		return nil, false
	case c.CreatedAt.Before(esdoc.MinStorableTime):
		f.empty = true
		return nil, false
	}
	return []string{esdoc.QueryTime(c.CreatedAt), c.ID}, true
}

// Lookup searches every daily index for scope's messages with any of ids,
// readable or not. Search sees a write only after a refresh (ReadLag). Ids go in
// chunks under the search window (index.max_result_window, 10,000), and a chunk
// is searched again for the ids not yet found while its reply was cut short: by
// the page's byte budget, or by one id stored in two daily indices.
func (s *Queries) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	var found []domain.Message
	for chunk := range slices.Chunk(ids, maxLookupIDs) {
		for len(chunk) > 0 {
			f := &filters{}
			f.term("account", scope.Account)
			f.term("domain", scope.Domain)
			f.add(object{"terms": object{"id": chunk}})
			page, err := s.search(ctx, "lookup", f, object{"size": len(chunk) + 1}, len(chunk))
			if err != nil {
				return nil, err
			}
			found = append(found, page.Messages...)
			if !page.HasMore {
				break
			}
			chunk = slices.DeleteFunc(slices.Clone(chunk), func(id string) bool {
				return slices.ContainsFunc(page.Messages, func(m domain.Message) bool { return m.ID == id })
			})
		}
	}
	return found, nil
}

// LookupTallies searches every daily index for scope's tallies with any of
// ids, as Lookup does its messages; an id may come twice.
func (s *Queries) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	var found []ports.StoredTally
	for chunk := range slices.Chunk(ids, maxLookupIDs) {
		f := &filters{tallies: true}
		f.term("account", scope.Account)
		f.term("domain", scope.Domain)
		f.add(object{"terms": object{"id": chunk}})
		var reply struct {
			Hits struct {
				Hits []struct {
					ID     string `json:"_id"`
					Source struct {
						Rules struct {
							Submitted string `json:"submitted"`
						} `json:"rules"`
					} `json:"_source"`
				} `json:"hits"`
			} `json:"hits"`
		}
		// Twice the ids: one id may be stored in two daily indices.
		body := object{"size": 2 * len(chunk), "_source": []string{"rules.submitted"}}
		if err := s.searchInto(ctx, "lookup tallies", f, body, &reply); err != nil {
			return nil, err
		}
		for _, h := range reply.Hits.Hits {
			found = append(found, ports.StoredTally{ID: h.ID, Submitted: h.Source.Rules.Submitted})
		}
	}
	return found, nil
}

// maxLookupIDs is how many ids one Lookup search asks for.
const maxLookupIDs = 1000

// maxKeyBytes bounds a lookup key: ids and references are far shorter, and
// Elasticsearch refuses overlong terms.
const maxKeyBytes = 512

// Get searches every daily index for the scope's message whose id or reference
// is idOrReference and that is readable at now; an id match wins over a
// reference match, as in the memory store.
func (s *Queries) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, fmt.Errorf("elastic: get: %w", err)
	}
	notFound := fmt.Errorf("elastic: message %.60q: %w", idOrReference, ports.ErrNotFound)
	// Invalid UTF-8 would reach Elasticsearch as U+FFFD and could match.
	if idOrReference == "" || len(idOrReference) > maxKeyBytes || !utf8.ValidString(idOrReference) {
		return domain.Message{}, notFound
	}
	f := readable(scope, now)
	if f.empty {
		return domain.Message{}, notFound
	}
	f.add(object{"bool": object{
		"should": []object{
			{"term": object{"id": idOrReference}},
			{"term": object{"reference": idOrReference}},
		},
		"minimum_should_match": 1,
	}})
	page, err := s.search(ctx, "get", f, object{"size": 2, "sort": newestFirst}, 2)
	if err != nil {
		return domain.Message{}, err
	}
	msgs := page.Messages
	for _, m := range msgs {
		if m.ID == idOrReference {
			return m.WithoutExpiredBodies(now), nil
		}
	}
	if len(msgs) == 0 {
		return domain.Message{}, notFound
	}
	return msgs[0].WithoutExpiredBodies(now), nil
}

// notTally leaves out the tallies: an index made before them has no such
// field, and then nothing to leave out.
var notTally = object{"term": object{"tally": true}}

// search runs body with f as its query over the read pattern. An empty store
// (no index yet) is no error; a shard that cannot answer is, rather than a
// silently partial page.
func (s *Queries) search(ctx context.Context, op string, f *filters, body object, limit int) (domain.Page, error) {
	reply := &pageReader{limit: limit}
	if err := s.searchInto(ctx, op, f, body, reply); err != nil {
		return domain.Page{}, err
	}
	if reply.badHit != nil {
		return domain.Page{}, fmt.Errorf("elastic: %s: %w", op, reply.badHit)
	}
	return reply.page, nil
}

// searchInto runs body with f as its query over the read pattern and
// decodes the reply into reply (as esclient.Client.Do does).
func (s *Queries) searchInto(ctx context.Context, op string, f *filters, body object, reply any) error {
	// Tallies (what ingest rules dropped) are counted by Stats alone.
	query := object{"filter": f.clauses, "must_not": notTally}
	if f.tallies {
		query = object{"filter": append(f.clauses, notTally)}
	}
	body["query"] = object{"bool": query}
	body["track_total_hits"] = false
	return s.searchBody(ctx, op, body, reply)
}

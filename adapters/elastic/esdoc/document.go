package esdoc

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// A message is stored as its record (adapters/record: the fields of
// the daily indices' mappings), read back from _source. Times are the API's strings (UTC,
// six fractional digits), exact at the microsecond the domain keeps, and
// indexed as date_nanos. The index's mappings index the searched texts where
// the record holds them (path.text, bodies, header values); only the daily
// indices created before that (legacyMappings) take them from the writer in a
// full-text field.

// The range of date_nanos: a time outside it cannot be stored.
var (
	MinStorableTime = time.Unix(0, 0).UTC()
	MaxStorableTime = time.Unix(0, 1<<63-1).UTC().Truncate(time.Microsecond)
)

// Append appends m as stored: its record as record.AppendJSON writes
// it (by hand: encoding a bulk request was a quarter of the service's CPU
// under load).
func Append(dst []byte, m domain.Message) []byte {
	return record.AppendJSON(dst, m)
}

// AppendWithText appends m as an index created before in-place
// indexing takes it: the record, then the full-text field, which such an
// index leaves out of _source, since it indexes neither the record's
// request and response nor copies its path.
func AppendWithText(dst []byte, m domain.Message) []byte {
	dst = record.AppendJSONMembers(dst, m)
	return append(appendTexts(append(dst, `,"text":`...), m), '}')
}

// appendTexts appends the full-text field's array of m's searched texts.
func appendTexts(dst []byte, m domain.Message) []byte {
	dst = append(dst, '[')
	first := true
	searchedTexts(m, func(text string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonbytes.AppendString(dst, text)
	})
	return append(dst, ']')
}

// searchedTexts calls yield with each value of the full-text field of an
// index created before in-place indexing (AppendWithText): the texts
// q searches (domain.SearchedTexts: path, bodies, header values), each cut to
// its first domain.SearchedBodyBytes, empty texts left out, headers in name
// order so documents are deterministic. They are separate values of one
// array, so a phrase never spans two of them (position_increment_gap).
func searchedTexts(m domain.Message, yield func(string)) {
	for _, text := range []string{m.Path, m.Request.Body, m.Response.Body} {
		if text != "" {
			yield(headOf(text, domain.SearchedBodyBytes))
		}
	}
	var onStack [32]string
	for _, h := range []domain.Header{m.Request.Header, m.Response.Header} {
		for _, name := range jsonbytes.SortedKeys(onStack[:0], h) {
			for _, v := range h[name] {
				if v != "" {
					yield(headOf(v, domain.SearchedBodyBytes))
				}
			}
		}
	}
}

// headOf is the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxKeywordBytes is the longest term Lucene indexes: a longer keyword value
// fails its document. The domain's limits keep every field far below it.
const maxKeywordBytes = 32766

// CheckStorable refuses what the mappings cannot hold, before anything is sent.
func CheckStorable(m domain.Message) error {
	if m.ID == "" {
		return fmt.Errorf("has no id")
	}
	for _, kw := range []struct{ name, value string }{
		{"id", m.ID}, {"reference", m.Reference}, {"account", m.Account}, {"domain", m.Domain},
		{"name", m.Name}, {"method", m.Method}, {"path", m.Path}, {"ip_address", m.IPAddress},
	} {
		if len(kw.value) > maxKeywordBytes {
			return fmt.Errorf("id %s: %s takes %d bytes, more than the %d an Elasticsearch keyword holds: %w",
				m.ID, kw.name, len(kw.value), maxKeywordBytes, domain.ErrTooLarge)
		}
	}
	for _, ts := range []struct {
		name string
		t    time.Time
	}{{"CreatedAt", m.CreatedAt}, {"UpdatedAt", m.UpdatedAt}, {"VisibleAt", m.VisibleAt}, {"ExpiresAt", m.ExpiresAt}} {
		if ts.t.Before(MinStorableTime) || ts.t.After(MaxStorableTime) {
			return fmt.Errorf("%s %s is outside the storable range %s to %s", ts.name,
				domain.FormatTime(ts.t), domain.FormatTime(MinStorableTime), domain.FormatTime(MaxStorableTime))
		}
	}
	return nil
}

// QueryTime renders an instant for queries with all nine fractional digits, so
// that bounds compare exactly as the memory store compares time.Time values.
func QueryTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// AppendCreate appends the two lines of a bulk request that create m in
// index: the action and the document, with the full-text field if index was
// created before in-place indexing (legacy).
func AppendCreate(dst []byte, index string, legacy bool, m domain.Message) []byte {
	dst = jsonbytes.StringMember(dst, `{"create":{"_index":`, index)
	dst = jsonbytes.StringMember(dst, `,"_id":`, m.ID)
	dst = append(dst, "}}\n"...)
	if legacy {
		dst = AppendWithText(dst, m)
	} else {
		dst = Append(dst, m)
	}
	return append(dst, '\n')
}

package esdoc

import (
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/domain/stats"
)

// AppendUpdate appends the two lines of a bulk request that rewrite m's
// document in index (a re-scrub): an update of the fields privacy rules
// change and the rules record, each written (ip_address and rules null when
// empty, so the old value goes), the rest of the stored document left as
// it is. The full-text field is written too in an index created before
// in-place indexing (legacy), and null in the others: a document created
// while its index's layout was not known carries it (AppendCreate), and
// the old texts would stay searchable there. An update of a document no
// longer there fails (404) and stores nothing.
func AppendUpdate(dst []byte, index string, legacy bool, m domain.Message) []byte {
	dst = jsonbytes.StringMember(dst, `{"update":{"_index":`, index)
	dst = jsonbytes.StringMember(dst, `,"_id":`, m.ID)
	dst = append(dst, "}}\n"...)
	dst = append(dst, `{"doc":{"ip_address":`...)
	if m.IPAddress == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonbytes.AppendString(dst, m.IPAddress)
	}
	dst = jsonbytes.StringMember(dst, `,"path":`, m.Path)
	dst = jsonbytes.StringMember(dst, `,"route":`, stats.PathOf(m.Path))
	for _, side := range []struct {
		name string
		c    domain.Content
	}{{`,"request":`, m.Request}, {`,"response":`, m.Response}} {
		dst = append(dst, side.name...)
		dst = record.AppendScrubbed(dst, side.c)
	}
	dst = append(dst, `,"rules":`...)
	if m.Rules.IsZero() {
		dst = append(dst, "null"...)
	} else {
		dst = record.AppendRules(dst, m.Rules)
	}
	if legacy {
		dst = appendTexts(append(dst, `,"text":`...), m)
	} else {
		dst = append(dst, `,"text":null`...)
	}
	return append(dst, "}}\n"...)
}

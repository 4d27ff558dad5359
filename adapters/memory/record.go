package memory

import (
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/reqlog/reqlog/domain"
)

// A record is a message encoded without pointers. Strings are a uvarint length
// and their bytes; times their Unix seconds (varint) and nanoseconds (uvarint).
// The scope, name, status and duration live in the record's slot instead.
//
//	id, reference, ip address, method, path,
//	the number of header values of both sides,
//	request, then response: content type, size (varint), body, the number of
//	header names, then each name, its number of values and the values,
//	created, updated, visible, expires.
//
// A header name is a uvarint: 1 + its number in the store's headerNames, or 0
// followed by the name itself once maxHeaderNames are numbered.
//
// The fields filters read come first and the times, which only decoding reads,
// last, so a filter or search reads no further than it needs.

// maxHeaderNames bounds the header names a store numbers: a client sending
// ever new names gets them written out instead of growing the table forever.
const maxHeaderNames = 4096

// appendRecord appends m's record to b, numbering new header names in names.
func appendRecord(b []byte, m *domain.Message, names *interner[string]) []byte {
	for _, s := range []string{m.ID, m.Reference, m.IPAddress, m.Method, m.Path} {
		b = appendString(b, s)
	}
	values := 0
	for _, h := range []domain.Header{m.Request.Header, m.Response.Header} {
		for _, v := range h {
			values += len(v)
		}
	}
	b = binary.AppendUvarint(b, uint64(values))
	for _, c := range []*domain.Content{&m.Request, &m.Response} {
		b = appendString(b, c.ContentType)
		b = binary.AppendVarint(b, int64(c.Size))
		b = appendString(b, c.Body)
		b = binary.AppendUvarint(b, uint64(len(c.Header)))
		for name, vs := range c.Header {
			if n, ok := names.lookup(name); ok || names.len() < maxHeaderNames {
				if !ok {
					n = names.id(name)
				}
				b = binary.AppendUvarint(b, uint64(n)+1)
			} else {
				b = appendString(binary.AppendUvarint(b, 0), name)
			}
			b = binary.AppendUvarint(b, uint64(len(vs)))
			for _, v := range vs {
				b = appendString(b, v)
			}
		}
	}
	for _, t := range []time.Time{m.CreatedAt, m.UpdatedAt, m.VisibleAt, m.ExpiresAt} {
		b = binary.AppendVarint(b, t.Unix())
		b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// view is b as a string without a copy. The caller keeps b unchanged, and
// readable, for as long as the string is used.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// reader reads a record in order. Its strings are views of the record.
type reader struct {
	b []byte
	i int
}

func (r *reader) uvarint() uint64 {
	if c := r.b[r.i]; c < 0x80 { // most lengths and counts: one byte
		r.i++
		return uint64(c)
	}
	v, n := binary.Uvarint(r.b[r.i:])
	r.i += n
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b[r.i:])
	r.i += n
	return v
}

func (r *reader) str() string {
	n := int(r.uvarint())
	s := view(r.b[r.i : r.i+n])
	r.i += n
	return s
}

func (r *reader) skip(strings int) {
	for range strings {
		r.i += int(r.uvarint())
	}
}

func (r *reader) time() time.Time {
	sec := r.varint()
	return time.Unix(sec, int64(r.uvarint())).UTC()
}

// recordID is the id a record holds, as a view.
func recordID(rec []byte) string {
	r := reader{b: rec}
	return r.str()
}

// filtered is what a filter reads of a record: the ip address, method and path.
func filtered(rec []byte, m *domain.Message) {
	r := reader{b: rec}
	r.skip(2)
	m.IPAddress, m.Method, m.Path = r.str(), r.str(), r.str()
}

// recordPath is the path a record holds, as a view.
func recordPath(rec []byte) string {
	r := reader{b: rec}
	r.skip(4)
	return r.str()
}

// recordSearch is a q search on records.
type recordSearch struct {
	search domain.Search
}

func newRecordSearch(q string) recordSearch {
	return recordSearch{search: domain.NewSearch(q)}
}

// searchRecord reports whether one of the texts the search reads in rec holds
// it: the path, both bodies and every header value (domain.SearchedTexts), read
// in place.
func searchRecord(rec []byte, rs recordSearch) bool {
	r := reader{b: rec}
	r.skip(4)
	// The record's bytes from the path on hold every searched text: one scan
	// of them rules most records out (domain.Search.CouldBeIn).
	if !rs.search.CouldBeIn(view(rec[r.i:])) {
		return false
	}
	search := rs.search
	if search.In(r.str()) {
		return true
	}
	r.uvarint()
	for range 2 {
		r.skip(1)
		r.varint()
		if search.In(r.str()) {
			return true
		}
		for range r.uvarint() {
			if r.uvarint() == 0 {
				r.skip(1)
			}
			for range r.uvarint() {
				if search.In(r.str()) {
					return true
				}
			}
		}
	}
	return false
}

// decode fills m's fields from a record that belongs to m: its strings are
// views of rec, which must not change afterwards, or interned header names.
func decode(rec []byte, m *domain.Message, names *interner[string]) {
	r := reader{b: rec}
	m.ID, m.Reference, m.IPAddress, m.Method, m.Path = r.str(), r.str(), r.str(), r.str(), r.str()
	// The values of both sides share one slice, as domain.Header.Clone does.
	values := make([]string, 0, r.uvarint())
	for _, c := range []*domain.Content{&m.Request, &m.Response} {
		c.ContentType = r.str()
		c.Size = int(r.varint())
		c.Body = r.str()
		count := int(r.uvarint())
		c.Header = make(domain.Header, count)
		for range count {
			var name string
			if n := r.uvarint(); n > 0 {
				name = names.value(uint32(n - 1))
			} else {
				name = r.str()
			}
			n := int(r.uvarint())
			if n == 0 {
				c.Header[name] = nil
				continue
			}
			for range n {
				values = append(values, r.str())
			}
			c.Header[name] = values[len(values)-n : len(values) : len(values)]
		}
	}
	m.CreatedAt, m.UpdatedAt, m.VisibleAt, m.ExpiresAt = r.time(), r.time(), r.time(), r.time()
}

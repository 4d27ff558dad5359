package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// Messages are the bulk of the API's output, so they are encoded by hand: the
// bytes are exactly what encoding/json (with SetEscapeHTML(false)) writes for the
// reply structs in encode_test.go, which checks that, without its reflection,
// map copies and key sorting allocations.

// pooledBuffers recycles reply buffers; maxPooledBuffer keeps a rare huge page
// from being held on to.
var pooledBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 1 << 20

// writeEncoded writes the reply that encode appends to an empty buffer.
func writeEncoded(w http.ResponseWriter, status int, encode func([]byte) []byte) {
	buf := pooledBuffers.Get().(*[]byte)
	*buf = encode((*buf)[:0])
	writeBody(w, status, *buf)
	if cap(*buf) <= maxPooledBuffer {
		pooledBuffers.Put(buf)
	}
}

// appendListReply appends the body of a listing: limit is the query's, and the
// next cursor is null on the last page.
func appendListReply(dst []byte, page domain.Page, limit int) []byte {
	dst = append(dst, `{"status":true,"message":`...)
	dst = appendJSONString(dst, msgListed)
	dst = append(dst, `,"messages":[`...)
	for i, m := range page.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, m)
	}
	dst = append(dst, `],"pagination":{"limit":`...)
	dst = strconv.AppendInt(dst, int64(limit), 10)
	dst = append(dst, `,"has_more":`...)
	dst = strconv.AppendBool(dst, page.HasMore)
	dst = append(dst, `,"next_cursor":`...)
	if next := page.Next(); next != nil {
		dst = appendJSONString(dst, next.Encode())
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, "}}\n"...)
}

// appendFetchedReply appends the body of a single message's reply.
func appendFetchedReply(dst []byte, m domain.Message) []byte {
	dst = append(dst, `{"status":true,"message":`...)
	dst = appendJSONString(dst, msgFetched)
	dst = append(dst, `,"data":`...)
	dst = appendMessage(dst, m)
	return append(dst, "}\n"...)
}

// appendMessage appends m in the contract's field order; the account and the
// visibility and expiry times stay internal.
func appendMessage(dst []byte, m domain.Message) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"reference":`...)
	dst = appendJSONString(dst, m.Reference)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, m.Name)
	dst = append(dst, `,"domain":`...)
	dst = appendJSONString(dst, m.Domain)
	dst = append(dst, `,"ip_address":`...)
	dst = appendJSONString(dst, m.IPAddress)
	dst = append(dst, `,"status_code":`...)
	dst = strconv.AppendInt(dst, int64(m.StatusCode), 10)
	dst = append(dst, `,"request":`...)
	dst = appendContent(dst, m.Request)
	dst = append(dst, `,"response":`...)
	dst = appendContent(dst, m.Response)
	dst = append(dst, `,"path":`...)
	dst = appendJSONString(dst, m.Path)
	dst = append(dst, `,"method":`...)
	dst = appendJSONString(dst, m.Method)
	dst = append(dst, `,"created_at":`...)
	dst = appendTime(dst, m.CreatedAt)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime(dst, m.UpdatedAt)
	return append(dst, '}')
}

func appendContent(dst []byte, c domain.Content) []byte {
	dst = append(dst, `{"header":`...)
	dst = appendHeader(dst, c.Header)
	dst = append(dst, `,"body":`...)
	dst = appendJSONString(dst, c.Body)
	dst = append(dst, `,"content_type":`...)
	dst = appendJSONString(dst, c.ContentType)
	return append(dst, '}')
}

// appendHeader writes the names in byte order, as encoding/json sorts map keys; a
// nil header or value list is written empty, never null.
func appendHeader(dst []byte, h domain.Header) []byte {
	var onStack [32]string // enough for typical headers without a heap allocation
	names := onStack[:0]
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, name)
		dst = append(dst, `:[`...)
		for j, value := range h[name] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, value)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendTime writes t as domain.FormatTime does, without the intermediate string.
func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, domain.TimeLayout)
	return append(dst, '"')
}

// appendJSONString quotes s as encoding/json does with HTML escaping off:
// short escapes for \b \f \n \r \t " and \, \u00XX for other control bytes,
// \ufffd for each invalid UTF-8 byte, and U+2028 and U+2029 escaped for JSONP.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// Messages are the bulk of the API's output, so they are encoded by hand with
// jsonbytes: the bytes are exactly what encoding/json (with SetEscapeHTML(false))
// writes for the reply structs in encode_test.go, which checks that.

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
	dst = slices.Grow(dst, replySize(page.Messages...))
	dst = jsonbytes.StringMember(dst, `{"status":true,"message":`, msgListed)
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
		dst = jsonbytes.AppendString(dst, next.Encode())
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, "}}\n"...)
}

// appendFetchedReply appends the body of a single message's reply: the
// message, and beside it what the rule sets did to it (appendRulesRecord),
// so that the message object is the same in every reply and export.
func appendFetchedReply(dst []byte, m domain.Message) []byte {
	dst = slices.Grow(dst, replySize(m))
	dst = jsonbytes.StringMember(dst, `{"status":true,"message":`, msgFetched)
	dst = append(dst, `,"data":`...)
	dst = appendMessage(dst, m)
	dst = append(dst, `,"rules":`...)
	dst = appendRulesRecord(dst, m.Rules)
	return append(dst, "}\n"...)
}

// appendRulesRecord appends a message's rules record: the version that
// wrote it (0: none), what captured it (null: unknown), the version a
// re-scrub applied (null: none) and which rule changed which field, never
// the values.
func appendRulesRecord(dst []byte, r domain.RulesRecord) []byte {
	dst = jsonbytes.IntMember(dst, `{"version":`, int(r.Version))
	if r.Source == "" {
		dst = append(dst, `,"source":null`...)
	} else {
		dst = jsonbytes.StringMember(dst, `,"source":`, r.Source)
	}
	if r.Rescrubbed == 0 {
		dst = append(dst, `,"rescrubbed_by":null`...)
	} else {
		dst = jsonbytes.IntMember(dst, `,"rescrubbed_by":`, int(r.Rescrubbed))
	}
	dst = append(dst, `,"changes":[`...)
	for i, c := range r.Changes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonbytes.StringMember(dst, `{"rule":`, c.Rule)
		dst = jsonbytes.StringMember(dst, `,"field":`, c.Field)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// replySize is about how long the reply holding msgs is, so that its buffer
// grows at most once: pooled buffers last only until the second garbage
// collection, which comes every few requests when pages are large, and a
// page of a hundred messages grown by doubling copied itself several times.
// JSON bodies grow by a fifth or so when escaped; headers are counted at a
// typical size, since adding up their values would cost a map walk.
func replySize(msgs ...domain.Message) int {
	const perMessage, perHeader = 512, 64
	n := 256
	for _, m := range msgs {
		n += perMessage + len(m.Path)
		for _, c := range [...]domain.Content{m.Request, m.Response} {
			n += len(c.Body) + len(c.Body)/4 + perHeader*len(c.Header)
		}
	}
	return n
}

// appendMessage appends m in the contract's field order; the account and the
// visibility and expiry times stay internal.
func appendMessage(dst []byte, m domain.Message) []byte {
	dst = jsonbytes.StringMember(dst, `{"id":`, m.ID)
	dst = jsonbytes.StringMember(dst, `,"reference":`, m.Reference)
	dst = jsonbytes.StringMember(dst, `,"name":`, m.Name)
	dst = jsonbytes.StringMember(dst, `,"domain":`, m.Domain)
	dst = jsonbytes.StringMember(dst, `,"ip_address":`, m.IPAddress)
	dst = jsonbytes.IntMember(dst, `,"status_code":`, m.StatusCode)
	dst = appendDurationMS(append(dst, `,"duration_ms":`...), m)
	dst = append(dst, `,"request":`...)
	dst = appendContent(dst, m.Request)
	dst = append(dst, `,"response":`...)
	dst = appendContent(dst, m.Response)
	dst = jsonbytes.StringMember(dst, `,"path":`, m.Path)
	if m.Route == "" {
		dst = append(dst, `,"route":null`...)
	} else {
		dst = jsonbytes.StringMember(dst, `,"route":`, m.Route)
	}
	dst = jsonbytes.StringMember(dst, `,"method":`, m.Method)
	dst = jsonbytes.TimeMember(dst, `,"created_at":`, m.CreatedAt, domain.TimeLayout)
	dst = jsonbytes.TimeMember(dst, `,"updated_at":`, m.UpdatedAt, domain.TimeLayout)
	dst = jsonbytes.IntMember(dst, `,"sample_rate":`, max(m.SampleRate, 1))
	return append(dst, '}')
}

func appendContent(dst []byte, c domain.Content) []byte {
	dst = append(dst, `{"header":`...)
	dst = appendHeader(dst, c.Header)
	dst = jsonbytes.StringMember(dst, `,"body":`, c.Body)
	dst = jsonbytes.StringMember(dst, `,"content_type":`, c.ContentType)
	dst = jsonbytes.IntMember(dst, `,"size":`, c.Size)
	return append(dst, '}')
}

// appendDurationMS writes m's duration in milliseconds, null when it has none.
// 'f' with the shortest precision is what encoding/json writes for a float64 in
// this range, and a whole number of microseconds over 1000 has at most three
// decimals.
func appendDurationMS(dst []byte, m domain.Message) []byte {
	ms, ok := m.DurationMS()
	if !ok {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, ms, 'f', -1, 64)
}

// appendHeader writes the names in byte order, as encoding/json sorts map keys; a
// nil header or value list is written empty, never null.
func appendHeader(dst []byte, h domain.Header) []byte {
	var onStack [32]string // enough for typical headers without a heap allocation
	names := jsonbytes.SortedKeys(onStack[:0], h)
	dst = append(dst, '{')
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonbytes.AppendString(dst, name)
		dst = append(dst, `:[`...)
		for j, value := range h[name] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonbytes.AppendString(dst, value)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendIngestReply appends the reply to an accepted submission, as writeJSON
// would encode reply{Status: true, Message: msgIngested, Data: ...}: by hand,
// since it is written once per POST on the hot path.
func appendIngestReply(dst []byte, result app.SubmitResult) []byte {
	dst = append(dst, `{"status":true,"message":`...)
	dst = jsonbytes.AppendString(dst, msgIngested)
	dst = append(dst, `,"data":`...)
	single := !result.Multiple && len(result.Identities) == 1
	if !single {
		dst = append(dst, '[')
	}
	for i, id := range result.Identities {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = jsonbytes.AppendString(dst, id.ID)
		dst = append(dst, `,"reference":`...)
		dst = jsonbytes.AppendString(dst, id.Reference)
		if id.Dropped {
			dst = append(dst, `,"stored":false`...) // an ingest rule dropped it
		}
		dst = append(dst, '}')
	}
	if !single {
		dst = append(dst, ']')
	}
	return append(dst, "}\n"...)
}

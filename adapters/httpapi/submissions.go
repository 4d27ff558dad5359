package httpapi

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// A POST body is decoded into drafts (domain.Drafts) here, at the edge: the
// body is checked in one pass (syntax and nesting, noting the ends of long
// values), then walked once, each member the contract names read as a typed
// value, every other member skipped. Validation, normalisation, masking and
// redaction are the domain's (domain.Validator).

// DecodeSubmissions decodes a POST body, in any of the contract's three shapes,
// into drafts, keeping at most maxItems items of a batch (Count says how many
// it held). Errors are *domain.ValidationError: an empty body, one that is not
// JSON or nests more than domain.MaxNesting levels, one that is neither an
// object nor an array, and an envelope whose "messages" is not an array. The
// drafts point into body and into memory of their own: body must not change
// while they are in use.
func DecodeSubmissions(body []byte, maxItems int) (domain.Drafts, error) {
	return new(decoding).decode(body, maxItems)
}

// ParseSubmissions decodes body and validates its drafts, as POST
// /v1/messages does before storing them.
func ParseSubmissions(v domain.Validator, body []byte, now time.Time) (domain.Batch, error) {
	d := decodings.Get().(*decoding)
	defer d.release()
	drafts, err := d.decode(body, v.MaxBatch())
	if err != nil {
		return domain.Batch{}, err
	}
	return v.ValidateSubmissions(drafts, now)
}

// decoding holds what decoding one body makes: the index of its long values,
// the text its strings decode to, and the drafts, their header fields and
// values. Drafts point into it and into the body, so it is reused (pooled)
// only once they are validated: validation copies what messages keep.
type decoding struct {
	notes  jsonbytes.Notes
	ends   jsonbytes.Ends
	text   []byte
	items  []domain.Draft
	fields []domain.DraftHeaderField
	values []domain.Value
}

var decodings = sync.Pool{New: func() any { return new(decoding) }}

// maxPooledDecoding bounds what a pooled decoding keeps: a rare huge body's
// buffers are left to the collector, and so is an index of more than
// maxPooledEnds values (a map never shrinks).
const (
	maxPooledDecoding = 1 << 20
	maxPooledEnds     = 1 << 14
)

func (d *decoding) release() {
	clear(d.items) // they point into the body, which must not be kept alive
	clear(d.fields)
	clear(d.values)
	if len(d.ends) > maxPooledEnds {
		d.ends = nil
	}
	clear(d.ends)
	if cap(d.text) <= maxPooledDecoding && cap(d.notes.Spans)*16 <= maxPooledDecoding && cap(d.values)*32 <= maxPooledDecoding {
		decodings.Put(d)
	}
}

// decode decodes body into drafts that point into d and body.
func (d *decoding) decode(body []byte, maxItems int) (domain.Drafts, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return domain.Drafts{}, invalid("the request body is empty: send a JSON object or array")
	}
	d.notes = jsonbytes.Notes{Values: true, Spans: d.notes.Spans[:0]}
	switch jsonbytes.Check(trimmed, domain.MaxNesting, &d.notes) {
	case jsonbytes.TooDeep:
		return domain.Drafts{}, invalid("the request body nests arrays and objects more than %d levels deep", domain.MaxNesting)
	case jsonbytes.Invalid:
		return domain.Drafts{}, invalid("the request body is not valid JSON")
	}
	if d.ends == nil {
		d.ends = make(jsonbytes.Ends, len(d.notes.Spans))
	}
	d.ends.Add(trimmed, d.notes.Spans)
	// Decoded strings are at most as long as their literals, but for invalid
	// UTF-8: text rarely grows while drafts point into it (and if it does, they
	// keep pointing into the old array, which nothing writes again).
	if cap(d.text) < len(trimmed) {
		d.text = make([]byte, 0, len(trimmed))
	}
	d.text, d.items, d.fields, d.values = d.text[:0], d.items[:0], d.fields[:0], d.values[:0]
	switch trimmed[0] {
	case '[':
		return d.batch(trimmed, maxItems, false), nil
	case '{':
		// Members by their exact keys: only the exact key "messages" makes an
		// envelope (encoding/json would match struct tags ignoring case).
		m := d.members(trimmed)
		messages := m[keyMessages]
		if messages == nil {
			d.items = append(d.items, d.draft(&m))
			return domain.Drafts{Items: d.items, Count: 1}, nil
		}
		if jsonbytes.KindOf(messages) != jsonbytes.Array {
			return domain.Drafts{}, &domain.ValidationError{Message: "the submission is invalid",
				Fields: []domain.FieldError{{Field: "messages", Message: "must be an array of messages"}}}
		}
		return d.batch(messages, maxItems, true), nil
	default:
		return domain.Drafts{}, invalid("the request body must be a JSON object or array")
	}
}

func invalid(format string, args ...any) *domain.ValidationError {
	return &domain.ValidationError{Message: fmt.Sprintf(format, args...)}
}

// batch decodes the items of array, the first maxItems of them: past those it
// only counts them, so a huge array of tiny items costs one walk.
func (d *decoding) batch(array []byte, maxItems int, envelope bool) domain.Drafts {
	drafts := domain.Drafts{Multiple: true, Envelope: envelope}
	for item := range jsonbytes.Elements(array, d.ends) {
		if drafts.Count++; drafts.Count > maxItems {
			continue
		}
		if kind := jsonbytes.KindOf(item); kind != jsonbytes.Object {
			d.items = append(d.items, domain.Draft{Kind: kind})
			continue
		}
		m := d.members(item)
		d.items = append(d.items, d.draft(&m))
	}
	drafts.Items = d.items
	return drafts
}

// draft is a submission of the members m.
func (d *decoding) draft(m *members) domain.Draft {
	return domain.Draft{
		Kind:       jsonbytes.Object,
		Name:       d.value(m[keyName]),
		App:        d.value(m[keyApp]),
		CreatedAt:  d.value(m[keyCreatedAt]),
		IPAddress:  d.value(m[keyIPAddress]),
		Method:     d.value(m[keyMethod]),
		Path:       d.value(m[keyPath]),
		Route:      d.value(m[keyRoute]),
		DurationMS: d.value(m[keyDurationMS]),
		StatusCode: d.value(m[keyStatusCode]),
		Request:    d.content(m[keyRequest]),
		Response:   d.content(m[keyResponse]),
	}
}

// content is a request or response member.
func (d *decoding) content(raw []byte) domain.DraftContent {
	kind := jsonbytes.KindOf(raw)
	if kind != jsonbytes.Object {
		return domain.DraftContent{Kind: kind}
	}
	m := d.members(raw)
	return domain.DraftContent{Kind: kind, Header: d.header(m[keyHeader]), Body: d.value(m[keyBody]),
		StatusCode: d.value(m[keyStatusCode])}
}

// header is a header member: each of its members in order, an array's
// elements as values of their own.
func (d *decoding) header(raw []byte) domain.DraftHeader {
	kind := jsonbytes.KindOf(raw)
	if kind != jsonbytes.Object {
		return domain.DraftHeader{Kind: kind}
	}
	first := len(d.fields)
	for key, value := range jsonbytes.Members(raw, d.ends) {
		f := domain.DraftHeaderField{Name: d.decodeString(key), Array: jsonbytes.KindOf(value) == jsonbytes.Array}
		start := len(d.values)
		if f.Array {
			for element := range jsonbytes.Elements(value, d.ends) {
				d.values = append(d.values, d.value(element))
			}
		} else {
			d.values = append(d.values, d.value(value))
		}
		f.Values = d.values[start:len(d.values):len(d.values)]
		d.fields = append(d.fields, f)
	}
	return domain.DraftHeader{Kind: kind, Fields: d.fields[first:len(d.fields):len(d.fields)]}
}

// value is a member's value: a string decoded, a number or boolean as its
// text, anything else by its kind alone.
func (d *decoding) value(raw []byte) domain.Value {
	switch kind := jsonbytes.KindOf(raw); kind {
	case jsonbytes.String:
		return domain.Value{Kind: kind, Text: d.decodeString(raw)}
	case jsonbytes.Number, jsonbytes.Bool:
		return domain.Value{Kind: kind, Text: raw}
	default:
		return domain.Value{Kind: kind}
	}
}

// decodeString decodes a string literal: its content as it is when that decodes to
// itself (no escapes, valid UTF-8), else decoded into d.text.
func (d *decoding) decodeString(literal []byte) []byte {
	content := literal[1 : len(literal)-1]
	plain := jsonbytes.PlainPrefix(content)
	if plain == len(content) {
		return content
	}
	start := len(d.text)
	d.text = jsonbytes.AppendUnquoted(append(d.text, content[:plain]...), content[plain:])
	return d.text[start:len(d.text):len(d.text)]
}

// memberKey names a member of the contract's submissions that decoding reads.
type memberKey uint8

const (
	keyName memberKey = iota
	keyApp
	keyCreatedAt
	keyIPAddress
	keyMethod
	keyPath
	keyRoute
	keyDurationMS
	keyStatusCode
	keyRequest
	keyResponse
	keyHeader
	keyBody
	keyMessages
	memberKeys // how many there are
)

// members holds the values of an object's members that decoding reads, by
// key; nil for an absent member. An array rather than a map: reading an object
// allocates nothing and hashes no key.
type members [memberKeys][]byte

// members collects the members of the well-formed object obj that the contract
// names, skipping the others; a repeated key keeps its last value, as
// json.Unmarshal into a map does.
func (d *decoding) members(obj []byte) members {
	var m members
	for key, value := range jsonbytes.Members(obj, d.ends) {
		if k, ok := memberKeyOf(key); ok {
			m[k] = value
		}
	}
	return m
}

// memberKeyOf reads a key literal as json.Unmarshal decodes it. Only an escape
// can make a literal decode to a contract name it does not spell: invalid UTF-8
// decodes to U+FFFD, which no name holds.
func memberKeyOf(literal []byte) (memberKey, bool) {
	name := literal[1 : len(literal)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		name = []byte(jsonbytes.Unquote(literal))
	}
	switch string(name) {
	case "name":
		return keyName, true
	case "app":
		return keyApp, true
	case "created_at":
		return keyCreatedAt, true
	case "ip_address":
		return keyIPAddress, true
	case "method":
		return keyMethod, true
	case "path":
		return keyPath, true
	case "route":
		return keyRoute, true
	case "duration_ms":
		return keyDurationMS, true
	case "status_code":
		return keyStatusCode, true
	case "request":
		return keyRequest, true
	case "response":
		return keyResponse, true
	case "header":
		return keyHeader, true
	case "body":
		return keyBody, true
	case "messages":
		return keyMessages, true
	}
	return 0, false
}

package domain

import (
	"strconv"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// Drafts are the submissions of one request as their sender wrote them, before
// validation: what the HTTP API decodes a POST body into (in any of the
// contract's three shapes), and what LocalSubmitter makes of exchanges
// (DraftsOf). Validator.ValidateSubmissions turns them into a Batch or says what is wrong
// with each, naming fields by their JSON paths.
type Drafts struct {
	Items []Draft
	// Multiple is true for an array or an envelope: the reply then lists
	// identities, and field errors are prefixed with the item index.
	Multiple bool
	// Envelope is true for {"messages": [...]}, whose items may use "app" for
	// "name" and a top-level "status_code".
	Envelope bool
	// Count is how many items the request held. A decoder stops keeping items
	// past the batch limit, so more than len(Items) means too many.
	Count int
}

// Draft is one submission as sent: each member the contract names, with its
// JSON type, none of them checked yet.
type Draft struct {
	// Kind is Object for a submission; an item of a batch that is not an
	// object is kept as its kind alone, for validation to refuse.
	Kind                                                                         jsonbytes.Kind
	Name, App, CreatedAt, IPAddress, Method, Path, Route, DurationMS, StatusCode Value
	Request, Response                                                            DraftContent
}

// DraftContent is a request or response member as sent.
type DraftContent struct {
	Kind       jsonbytes.Kind // Object, or the type sent instead
	Header     DraftHeader
	Body       Value
	StatusCode Value // read on the response only
}

// DraftHeader is a header object as sent: its members in order, names not yet
// canonical, so that colliding names merge in the order sent.
type DraftHeader struct {
	Kind   jsonbytes.Kind // Object, or the type sent instead
	Fields []DraftHeaderField
}

// DraftHeaderField is one member of a header object: its decoded name, and its
// value: one Value, or with Array the elements of an array.
type DraftHeaderField struct {
	Name   []byte
	Array  bool
	Values []Value
}

// Value is one JSON value as sent: its kind and, for a string, its decoded
// text; for a number or a boolean, its JSON text; for anything else, no text.
//
// Text is borrowed: a decoder may point it into buffers it reuses once
// validation returns, so validation copies whatever a message keeps.
type Value struct {
	Kind jsonbytes.Kind
	Text []byte
}

// absent treats a missing member and an explicit null alike.
func (v Value) absent() bool { return v.Kind == jsonbytes.Absent || v.Kind == jsonbytes.Null }

// StringValue is s as a JSON string carries it: each invalid UTF-8 byte
// becomes U+FFFD, as encoding/json writes it and every decoder reads it back.
func StringValue(s string) Value {
	return Value{Kind: jsonbytes.String, Text: jsonbytes.AppendValidUTF8(make([]byte, 0, len(s)), s)}
}

// DraftsOf is exchanges as one batch of drafts, each member as the client's
// JSON would carry it (Exchange says which are left out), so that an exchange
// submitted in process is validated exactly as one sent over HTTP.
func DraftsOf(exchanges []Exchange) Drafts {
	items := make([]Draft, len(exchanges))
	for i, e := range exchanges {
		items[i] = e.draft()
	}
	return Drafts{Items: items, Multiple: true, Count: len(items)}
}

func (e Exchange) draft() Draft {
	d := Draft{
		Kind:   jsonbytes.Object,
		Name:   StringValue(e.Name),
		Method: StringValue(e.Method),
		Path:   StringValue(e.Path),
		Request: DraftContent{Kind: jsonbytes.Object, Header: draftHeader(e.Request.Header),
			Body: StringValue(e.Request.Body)},
		Response: DraftContent{Kind: jsonbytes.Object, Header: draftHeader(e.Response.Header),
			Body:       StringValue(e.Response.Body),
			StatusCode: Value{Kind: jsonbytes.Number, Text: strconv.AppendInt(nil, int64(e.Response.StatusCode), 10)}},
	}
	if !e.CreatedAt.IsZero() {
		d.CreatedAt = StringValue(FormatTime(e.CreatedAt))
	}
	if e.IPAddress != "" {
		d.IPAddress = StringValue(e.IPAddress)
	}
	if e.Route != "" {
		d.Route = StringValue(e.Route)
	}
	if e.HasDuration {
		d.DurationMS = Value{Kind: jsonbytes.Number, Text: []byte(FormatDurationMS(e.Duration))}
	}
	return d
}

// draftHeader is h as a header object: its names in byte order, as
// encoding/json writes a map; none at all when h is empty, and a nil value
// list as null.
func draftHeader(h map[string][]string) DraftHeader {
	if len(h) == 0 {
		return DraftHeader{}
	}
	names := jsonbytes.SortedKeys(make([]string, 0, len(h)), h)
	fields := make([]DraftHeaderField, len(names))
	for i, name := range names {
		values := h[name]
		f := DraftHeaderField{Name: StringValue(name).Text, Array: values != nil}
		if values == nil {
			f.Values = []Value{{Kind: jsonbytes.Null}}
		}
		for _, v := range values {
			f.Values = append(f.Values, StringValue(v))
		}
		fields[i] = f
	}
	return DraftHeader{Kind: jsonbytes.Object, Fields: fields}
}

// TextBytes is about how many bytes of text d holds: what admitting drafts
// that came without a body counts for them.
func (d Drafts) TextBytes() int64 {
	n := 0
	for _, item := range d.Items {
		for _, v := range [...]Value{item.Name, item.CreatedAt, item.IPAddress, item.Method, item.Path, item.Route} {
			n += len(v.Text)
		}
		for _, c := range [...]DraftContent{item.Request, item.Response} {
			n += len(c.Body.Text)
			for _, f := range c.Header.Fields {
				n += len(f.Name)
				for _, v := range f.Values {
					n += len(v.Text)
				}
			}
		}
	}
	return int64(n)
}

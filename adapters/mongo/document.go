package mongo

import (
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/domain"
)

// maxDocumentBytes is MongoDB's limit on one document (maxBsonObjectSize, the
// same on every server version). The driver checks only its 48 MB message
// size, so a larger document would reach the server and be refused there, in
// an unordered insert after the other documents were written.
const maxDocumentBytes = 16 << 20

// Field names used in queries and indexes; the struct tags below must match.
const (
	fieldID        = "_id"
	fieldReference = "reference"
	fieldAccount   = "account"
	fieldDomain    = "domain"
	fieldName      = "name"
	fieldIP        = "ipAddress"
	fieldMethod    = "method"
	fieldPath      = "path"
	fieldStatus    = "statusCode"
	fieldCreatedAt = "createdAt"
	fieldVisibleAt = "visibleAt"
	fieldExpiresAt = "expiresAt"
	fieldExpireAt  = "expireAt"
)

// document is a message as stored. Times are Unix microseconds because a BSON
// date keeps only milliseconds and the contract round-trips microseconds;
// ExpireAt duplicates ExpiresAt as a BSON date for the TTL index.
type document struct {
	ID         string    `bson:"_id"`
	Reference  string    `bson:"reference"`
	Account    string    `bson:"account"`
	Domain     string    `bson:"domain"`
	Name       string    `bson:"name"`
	IPAddress  string    `bson:"ipAddress"`
	Method     string    `bson:"method"`
	Path       string    `bson:"path"`
	StatusCode int32     `bson:"statusCode"`
	Request    content   `bson:"request"`
	Response   content   `bson:"response"`
	CreatedAt  int64     `bson:"createdAt"`
	UpdatedAt  int64     `bson:"updatedAt"`
	VisibleAt  int64     `bson:"visibleAt"`
	ExpiresAt  int64     `bson:"expiresAt"`
	ExpireAt   time.Time `bson:"expireAt"`
}

type content struct {
	Headers     []header `bson:"headers"`
	Body        string   `bson:"body"`
	ContentType string   `bson:"contentType"`
}

// header is one header field. Names are not used as BSON keys: HTTP tokens may
// hold '.' and '$', which MongoDB treats specially in keys.
type header struct {
	Name   string   `bson:"name"`
	Values []string `bson:"values"`
}

// encodeDocuments marshals each message once, for InsertMany to send as is. It
// refuses the whole batch, before anything is written, if one message lacks an
// id or is larger than MongoDB stores: the latter wraps domain.ErrTooLarge,
// since only a smaller message can succeed.
func encodeDocuments(msgs []domain.Message) ([]bson.Raw, error) {
	docs := make([]bson.Raw, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			return nil, fmt.Errorf("mongo: append: message %d has no id", i)
		}
		raw, err := bson.Marshal(toDocument(m))
		if err != nil {
			return nil, fmt.Errorf("mongo: append: message %d (id %s): %w", i, m.ID, err)
		}
		if len(raw) > maxDocumentBytes {
			return nil, fmt.Errorf("mongo: append: message %d (id %s) takes %d bytes as a MongoDB document, "+
				"more than MongoDB's 16 MiB document limit (%d bytes): %w", i, m.ID, len(raw), maxDocumentBytes, domain.ErrTooLarge)
		}
		docs[i] = raw
	}
	return docs, nil
}

func toDocument(m domain.Message) document {
	return document{
		ID:         m.ID,
		Reference:  m.Reference,
		Account:    m.Account,
		Domain:     m.Domain,
		Name:       m.Name,
		IPAddress:  m.IPAddress,
		Method:     m.Method,
		Path:       m.Path,
		StatusCode: int32(m.StatusCode),
		Request:    toContent(m.Request),
		Response:   toContent(m.Response),
		CreatedAt:  m.CreatedAt.UnixMicro(),
		UpdatedAt:  m.UpdatedAt.UnixMicro(),
		VisibleAt:  m.VisibleAt.UnixMicro(),
		ExpiresAt:  m.ExpiresAt.UnixMicro(),
		// Rounded up, so the TTL monitor never deletes before ExpiresAt.
		ExpireAt: roundUp(m.ExpiresAt, time.Millisecond),
	}
}

// roundUp rounds t up to a multiple of unit.
func roundUp(t time.Time, unit time.Duration) time.Time {
	down := t.Truncate(unit)
	if down.Before(t) {
		return down.Add(unit)
	}
	return down
}

// toContent stores headers sorted by name (a map has no order of its own);
// each header's values keep their order.
func toContent(c domain.Content) content {
	names := make([]string, 0, len(c.Header))
	for name := range c.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	headers := make([]header, len(names))
	for i, name := range names {
		// A non-nil slice, so a header without values is stored as [] and not null.
		headers[i] = header{Name: name, Values: append([]string{}, c.Header[name]...)}
	}
	return content{Headers: headers, Body: c.Body, ContentType: c.ContentType}
}

func (d document) message() domain.Message {
	return domain.Message{
		ID:         d.ID,
		Reference:  d.Reference,
		Account:    d.Account,
		Domain:     d.Domain,
		Name:       d.Name,
		IPAddress:  d.IPAddress,
		Method:     d.Method,
		Path:       d.Path,
		StatusCode: int(d.StatusCode),
		Request:    d.Request.content(),
		Response:   d.Response.content(),
		CreatedAt:  fromMicros(d.CreatedAt),
		UpdatedAt:  fromMicros(d.UpdatedAt),
		VisibleAt:  fromMicros(d.VisibleAt),
		ExpiresAt:  fromMicros(d.ExpiresAt),
	}
}

func (c content) content() domain.Content {
	h := make(domain.Header, len(c.Headers))
	for _, field := range c.Headers {
		values := h[field.Name]
		if values == nil {
			values = []string{} // a header without values reads back as [] and not null
		}
		h[field.Name] = append(values, field.Values...)
	}
	return domain.Content{Header: h, Body: c.Body, ContentType: c.ContentType}
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

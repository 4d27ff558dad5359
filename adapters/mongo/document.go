package mongo

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// maxDocumentBytes is MongoDB's limit on one document (maxBsonObjectSize, the
// same on every server version). The driver checks only its 48 MB message
// size, so a larger document would reach the server and be refused there, in
// an unordered insert after the other documents were written.
const maxDocumentBytes = 16 << 20

// Field names used in queries and indexes: record.Record's bson tags.
const (
	fieldID             = "_id"
	fieldReference      = "reference"
	fieldAccount        = "account"
	fieldDomain         = "domain"
	fieldName           = "name"
	fieldIP             = "ipAddress"
	fieldMethod         = "method"
	fieldPath           = "path"
	fieldStatus         = "statusCode"
	fieldCreatedAt      = "createdAt"
	fieldVisibleAt      = "visibleAt"
	fieldExpiresAt      = "expiresAt"
	fieldExpireAt       = "expireAt"
	fieldSubjects       = "subjects"
	fieldRoute          = record.BSONRoute
	fieldTemplate       = record.BSONRouteTemplate
	fieldDuration       = record.BSONDuration
	fieldTally          = "tally"
	fieldRetention      = "retentionRule"
	fieldBodiesExpireAt = record.BSONBodiesExpireAt
	fieldRules          = "rules"
	fieldRequest        = "request"
	fieldResponse       = "response"
	// Within request and response.
	fieldBody         = "body"
	fieldHeaders      = "headers"
	fieldHeaderValues = "values"
)

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
		raw, err := bson.Marshal(record.FromMessage(m))
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

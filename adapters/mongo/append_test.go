package mongo_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// mongoDocumentLimit is MongoDB's maxBsonObjectSize, 16 MiB on every version.
const mongoDocumentLimit = 16 << 20

// storeAndCollection opens a store on a fresh database and, with a client of
// the test's own, the collection it writes.
func storeAndCollection(t *testing.T) (*mongo.Store, *mongodrv.Collection) {
	t.Helper()
	uri, db := mongotest.NewDatabase(t)
	return mustOpen(t, mongo.Config{URI: uri, Database: db}), rawCollection(t, uri, db)
}

// storedCount counts the documents of coll whose _id is one of msgs' ids.
func storedCount(t *testing.T, coll *mongodrv.Collection, msgs ...domain.Message) int64 {
	t.Helper()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	n, err := coll.CountDocuments(opCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		t.Fatalf("counting documents: %v", err)
	}
	return n
}

// storedSize is the size in bytes of m's document as the server holds it.
func storedSize(t *testing.T, coll *mongodrv.Collection, m domain.Message) int {
	t.Helper()
	raw, err := coll.FindOne(opCtx(t), bson.D{{Key: "_id", Value: m.ID}}).Raw()
	if err != nil {
		t.Fatalf("reading %s back: %v", m.ID, err)
	}
	return len(raw)
}

// A message over MongoDB's 16 MiB document limit fails the whole Append with
// domain.ErrTooLarge before anything is written: a real MongoDB would refuse
// just that document of the unordered insert and keep the others (FerretDB
// stores it, so only the check before the insert makes the test pass there).
func TestAppendRefusesDocumentsOverMongoLimit(t *testing.T) {
	t.Parallel()
	s, coll := storeAndCollection(t)
	now := time.Now()
	for _, tc := range []struct {
		name string
		edit func(*domain.Message)
	}{
		{"large body", func(m *domain.Message) { m.Response.Body = strings.Repeat("x", mongoDocumentLimit) }},
		// 1.3 million empty values: 3.9 MB of JSON, about 17 MB of BSON, since
		// each array element carries its index as a key.
		{"many empty header values", func(m *domain.Message) { m.Request.Header = domain.Header{"A": make([]string, 1_300_000)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := newMessage(t, now)
			big := newMessage(t, now, tc.edit)
			for _, batch := range [][]domain.Message{{big}, {good, big}, {big, good}} {
				err := s.Append(opCtx(t), batch)
				if !errors.Is(err, domain.ErrTooLarge) {
					t.Fatalf("Append of %d messages, one too large: %v, want an error wrapping domain.ErrTooLarge", len(batch), err)
				}
				if errors.Is(err, ports.ErrUnavailable) {
					t.Errorf("Append: %v wraps ErrUnavailable, but retrying cannot help", err)
				}
				if !strings.Contains(err.Error(), big.ID) || !strings.Contains(err.Error(), "16 MiB") {
					t.Errorf("Append error %q should name %s and MongoDB's 16 MiB limit", err, big.ID)
				}
				if n := storedCount(t, coll, good, big); n != 0 {
					t.Errorf("%d of the refused batch's documents are stored, want none", n)
				}
			}
			// The good message alone, as group commit retries it, is stored.
			if err := s.Append(opCtx(t), []domain.Message{good}); err != nil {
				t.Fatalf("Append of the good message alone: %v", err)
			}
		})
	}
}

// A document of exactly 16 MiB is stored, one byte more is refused: the check
// counts what the server counts.
func TestAppendDocumentLimitIsExact(t *testing.T) {
	t.Parallel()
	s, coll := storeAndCollection(t)
	now := time.Now()
	// Messages of one shape differ in size only by their body, byte for byte.
	probe := newMessage(t, now)
	if err := s.Append(opCtx(t), []domain.Message{probe}); err != nil {
		t.Fatal(err)
	}
	room := mongoDocumentLimit - storedSize(t, coll, probe)
	withBody := func(n int) domain.Message {
		return newMessage(t, now, func(m *domain.Message) { m.Response.Body = strings.Repeat("x", n) })
	}

	over := withBody(room + 1)
	if err := s.Append(opCtx(t), []domain.Message{over}); !errors.Is(err, domain.ErrTooLarge) {
		t.Errorf("Append of a document of 16 MiB + 1 byte: %v, want domain.ErrTooLarge", err)
	}
	atLimit := withBody(room)
	if err := s.Append(opCtx(t), []domain.Message{atLimit}); err != nil {
		t.Fatalf("Append of a document of exactly 16 MiB: %v", err)
	}
	if size := storedSize(t, coll, atLimit); size != mongoDocumentLimit {
		t.Errorf("the stored document has %d bytes, want %d", size, mongoDocumentLimit)
	}
}

// A valid submission whose document MongoDB cannot hold is a 413 naming the
// limit, not a 500, and nothing of its request is stored: here 3.9 MB of JSON
// whose 1.3 million empty header values take about 17 MB of BSON.
func TestAPIRefusesSubmissionsOverMongoLimit(t *testing.T) {
	t.Parallel()
	s, coll := storeAndCollection(t)
	const key = "mongo-limit-key"
	api := httpapitest.Serve(t, s, conformance.APIConfig{
		Keys:   []conformance.APIKey{{Account: scope.Account, Domain: scope.Domain, Key: key}},
		Policy: domain.DefaultPolicy(),
	})
	submission := func(header string) string {
		return fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"GET","path":"/orders",`+
			`"request":{"header":{%s}},"response":{"status_code":200}}`, time.Now().Unix(), header)
	}
	big := submission(`"A":[""` + strings.Repeat(`,""`, 1_300_000-1) + `]`)
	good := submission(`"Accept":"application/json"`)

	for name, body := range map[string]string{"one submission": big, "a batch with a good one": "[" + good + "," + big + "]"} {
		t.Run(name, func(t *testing.T) {
			status, message := httpapitest.Submit(t, api, key, body)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(message, "16 MiB") {
				t.Errorf("POST of %d bytes: %d %q, want 413 naming MongoDB's 16 MiB limit", len(body), status, message)
			}
			n, err := coll.CountDocuments(opCtx(t), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d documents stored after the refusal, want none", n)
			}
		})
	}
}

package record_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// reference is what encoding/json writes for v with HTML escaping off.
func reference(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// recordStrings need every escaping rule of encoding/json.
var recordStrings = []string{
	"", "plain", `quote " and backslash \`, "\x00\x01\x1f controls", "\x7f DEL", "<script>&amp;</script>",
	"line\u2028separator\u2029paragraph", "emoji 🚀 and é", "bad \xff byte", "\xed\xa0\x80 surrogate",
	`{"json":"body","n":[1,2,3]}`, "tab\tnewline\ncr\rbackspace\bformfeed\f", "/v1/orders?id=1&x=?",
}

func recordMessages() []domain.Message {
	at := time.Date(2025, 3, 14, 12, 0, 0, 123456000, time.UTC)
	var msgs []domain.Message
	for i, s := range recordStrings {
		m := domain.Message{
			ID: "id" + s, Reference: s, Account: s, Domain: s, Name: s, IPAddress: s, Method: s, Path: s, Route: s, StatusCode: 100 + i,
			Request:   domain.Content{Header: domain.Header{s: {s, "v"}, "Empty": {}}, Body: s, ContentType: s, Size: len(s) + i},
			Response:  domain.Content{Header: domain.Header{}, Body: s + s},
			CreatedAt: at.AddDate(0, 0, i), UpdatedAt: at, VisibleAt: at.Add(time.Second), ExpiresAt: at.AddDate(0, 1, 0),
		}
		if i%2 == 0 {
			m.Duration, m.HasDuration = time.Duration(i)*1500*time.Microsecond, true
		} else {
			m.Subjects = []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", s}
		}
		switch i % 3 { // a full rules record, one of a source alone, none
		case 0:
			m.Rules = domain.RulesRecord{Version: int64(i + 1), Source: s, Rescrubbed: int64(i + 2),
				Changes: []domain.RuleChange{{Rule: s, Field: "request.body." + s}, {Rule: "r", Field: s}}}
		case 1:
			m.Rules = domain.RulesRecord{Source: "api"}
		}
		switch i % 3 {
		case 1:
			m.SampleRate = 10 * i
		case 2:
			m = m.AsTally()
		}
		msgs = append(msgs, m)
	}
	many := domain.Header{}
	for i := range 100 { // more names than appendContent sorts on the stack
		many[fmt.Sprintf("X-%03d", 100-i)] = []string{strings.Repeat("v", i)}
	}
	epoch := time.Unix(0, 0).UTC()
	msgs = append(msgs, domain.Message{ID: "many", Request: domain.Content{Header: many}, Response: domain.Content{Header: domain.Header{}},
		CreatedAt: epoch, UpdatedAt: epoch, VisibleAt: epoch, ExpiresAt: time.Date(2262, 4, 11, 23, 47, 16, 854775000, time.UTC)})
	return msgs
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, m := range recordMessages() {
		if got, want := record.AppendJSON(nil, m), reference(t, record.FromMessage(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q:\n got %s\nwant %s", m.ID, got, want)
		}
	}
}

// Every message reads back as it was, through either encoding.
func TestRoundTrip(t *testing.T) {
	for _, m := range recordMessages() {
		viaJSON, err := record.DecodeJSON(record.AppendJSON(nil, m))
		if err != nil {
			t.Fatalf("message %q: %v", m.ID, err)
		}
		raw, err := bson.Marshal(record.FromMessage(m))
		if err != nil {
			t.Fatalf("message %q: %v", m.ID, err)
		}
		var r record.Record
		if err := bson.Unmarshal(raw, &r); err != nil {
			t.Fatalf("message %q: %v", m.ID, err)
		}
		if !reflect.DeepEqual(r.Subjects, m.Subjects) {
			t.Errorf("message %q: subjects stored as %v, want %v", m.ID, r.Subjects, m.Subjects)
		}
		decoded := map[string]domain.Message{"bson": r.Message()}
		if utf8.ValidString(fmt.Sprint(m)) { // JSON stores invalid UTF-8 as U+FFFD
			decoded["json"] = viaJSON
		}
		m.Subjects = nil // the subject index's alone: no read returns them
		for via, got := range decoded {
			if !reflect.DeepEqual(got, m) {
				t.Errorf("message %q through %s:\n got %+v\nwant %+v", m.ID, via, got, m)
			}
		}
	}
}

// The stored names and formats each store always had.
func TestStoredNames(t *testing.T) {
	at := time.Date(2025, 3, 14, 12, 0, 0, 123456000, time.UTC)
	m := domain.Message{ID: "i", Path: "/p?q=1", StatusCode: 201, Duration: 2500 * time.Microsecond, HasDuration: true,
		Request:   domain.Content{Header: domain.Header{"A": {"1"}}, Body: "ab", Size: 3},
		CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at.Add(time.Nanosecond)}
	raw, err := bson.Marshal(record.FromMessage(m))
	if err != nil {
		t.Fatal(err)
	}
	doc := bson.Raw(raw)
	for path, want := range map[string]any{
		"createdAt": at.UnixMicro(), "durationMicros": int64(2500), "route": "/p", "statusCode": int32(201),
		"request.headers.0.name": "A", "request.contentType": "", "ipAddress": "",
		"expireAt": bson.NewDateTimeFromTime(at.Add(time.Millisecond).Truncate(time.Millisecond)),
	} {
		v, err := doc.LookupErr(strings.Split(path, ".")...)
		if err != nil {
			t.Errorf("bson %s: %v", path, err)
			continue
		}
		var got any
		switch typed := want.(type) {
		case int64:
			got = v.Int64()
		case int32:
			got = v.Int32()
		case string:
			got = v.StringValue()
		case bson.DateTime:
			got = v.DateTime()
			want = int64(typed)
		}
		if got != want {
			t.Errorf("bson %s = %v, want %v", path, got, want)
		}
	}
	if v, err := doc.LookupErr("request", "size"); err != nil || v.AsInt64() != 3 {
		t.Errorf("bson request.size = %v (%v), want 3", v, err)
	}
	want := `{"id":"i","reference":"","account":"","domain":"","name":"","method":"","path":"/p?q=1","route":"/p",` +
		`"status_code":201,"duration_ms":2.5,"request":{"header":[{"name":"A","values":["1"]}],"body":"ab","content_type":"","size":3},` +
		`"response":{"header":[],"body":"","content_type":"","size":0},"created_at":"2025-03-14T12:00:00.123456Z",` +
		`"updated_at":"2025-03-14T12:00:00.123456Z","visible_at":"2025-03-14T12:00:00.123456Z","expires_at":"2025-03-14T12:00:00.123456Z"}`
	if got := record.AppendJSON(nil, m); string(got) != want {
		t.Errorf("json:\n got %s\nwant %s", got, want)
	}
}

// Documents stored before the explorer fields read: no duration, sizes from
// the stored bodies. A header named twice reads with every entry's values.
func TestOlderDocuments(t *testing.T) {
	at := time.Date(2025, 3, 14, 12, 0, 0, 123456000, time.UTC)
	want := domain.Message{ID: "i", Path: "/p?q=1", StatusCode: 200,
		Request:   domain.Content{Header: domain.Header{"A": {"1", "2", "3"}, "E": {}}, Body: "héllo", Size: 6},
		Response:  domain.Content{Header: domain.Header{}, Body: "", Size: 0},
		CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at}
	stamp := `"2025-03-14T12:00:00.123456Z"`
	fromElastic := `{"id":"i","reference":"","account":"","domain":"","name":"","method":"","path":"/p?q=1","status_code":200,` +
		`"request":{"header":[{"name":"A","values":["1"]},{"name":"A","values":["2","3"]},{"name":"E","values":null}],"body":"héllo","content_type":""},` +
		`"response":{"header":[],"body":"","content_type":""},"created_at":` + stamp + `,"updated_at":` + stamp +
		`,"visible_at":` + stamp + `,"expires_at":` + stamp + `}`
	got, err := record.DecodeJSON([]byte(fromElastic))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("older Elasticsearch document:\n got %+v\nwant %+v", got, want)
	}

	us := at.UnixMicro()
	header := func(name string, values ...string) bson.D {
		return bson.D{{Key: "name", Value: name}, {Key: "values", Value: values}}
	}
	fromMongo, err := bson.Marshal(bson.D{
		{Key: "_id", Value: "i"}, {Key: "reference", Value: ""}, {Key: "account", Value: ""}, {Key: "domain", Value: ""},
		{Key: "name", Value: ""}, {Key: "ipAddress", Value: ""}, {Key: "method", Value: ""}, {Key: "path", Value: "/p?q=1"},
		{Key: "statusCode", Value: int32(200)},
		{Key: "request", Value: bson.D{{Key: "headers", Value: bson.A{header("A", "1"), header("A", "2", "3"), header("E")}},
			{Key: "body", Value: "héllo"}, {Key: "contentType", Value: ""}}},
		{Key: "response", Value: bson.D{{Key: "headers", Value: bson.A{}}, {Key: "body", Value: ""}, {Key: "contentType", Value: ""}}},
		{Key: "createdAt", Value: us}, {Key: "updatedAt", Value: us}, {Key: "visibleAt", Value: us}, {Key: "expiresAt", Value: us},
		{Key: "expireAt", Value: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r record.Record
	if err := bson.Unmarshal(fromMongo, &r); err != nil {
		t.Fatal(err)
	}
	if got := r.Message(); !reflect.DeepEqual(got, want) {
		t.Errorf("older MongoDB document:\n got %+v\nwant %+v", got, want)
	}
}

func TestDecodeJSONRefusesBadValues(t *testing.T) {
	for _, doc := range []string{`{"created_at":12}`, `{"created_at":"yesterday"}`, `{"id":`, `{"duration_ms":"12"}`} {
		if _, err := record.DecodeJSON([]byte(doc)); err == nil {
			t.Errorf("DecodeJSON(%s) succeeded", doc)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for i, s := range recordStrings {
		f.Add(s, s+"body", "Name-"+s, s, 200+i, int64(i)*1e12, int64(i)*1777)
	}
	f.Fuzz(func(t *testing.T, text, body, headerName, headerValue string, status int, createdMicro, durationMicro int64) {
		at := time.UnixMicro(createdMicro)
		m := domain.Message{
			ID: text, Reference: body, Account: text, Domain: headerValue, Name: headerName, IPAddress: text,
			Method: text, Path: body, Route: headerName, StatusCode: status,
			Request: domain.Content{Header: domain.Header{headerName: {headerValue, text}, headerValue: nil, text: {}},
				Body: body, ContentType: text, Size: len(body)},
			Response:  domain.Content{Header: domain.Header{headerValue: {body}}, Body: body + text, ContentType: headerValue},
			Duration:  time.Duration(durationMicro) * time.Microsecond,
			CreatedAt: at, UpdatedAt: at.Add(time.Duration(status)), VisibleAt: at, ExpiresAt: at.Add(time.Hour),
			HasDuration: durationMicro%3 != 0,
		}
		if got, want := record.AppendJSON(nil, m), reference(t, record.FromMessage(m)); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func TestFieldNamesAreTheTags(t *testing.T) {
	typ := reflect.TypeFor[record.Record]()
	for field, names := range map[string][2]string{
		"Route":          {record.BSONRoute, record.JSONRoute},
		"Duration":       {record.BSONDuration, record.JSONDuration},
		"BodiesExpireAt": {record.BSONBodiesExpireAt, record.JSONBodiesExpireAt},
	} {
		f, _ := typ.FieldByName(field)
		bsonName, _, _ := strings.Cut(f.Tag.Get("bson"), ",")
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if bsonName != names[0] || jsonName != names[1] {
			t.Errorf("%s is stored as %q / %q, the constants say %q / %q", field, bsonName, jsonName, names[0], names[1])
		}
	}
}

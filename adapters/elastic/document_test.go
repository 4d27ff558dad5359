package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/internal/record"
	"github.com/reqlog/reqlog/domain"
)

// The reference encoding: the structs Append encoded with encoding/json before
// appendDocument; the hand-written encoder must produce the same bytes.

type bulkAction struct {
	Create bulkTarget `json:"create"`
}

type bulkTarget struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

// storedDocument is a document as written into an index created before
// in-place indexing: the record, then the full-text field.
type storedDocument struct {
	record.Record
	Text []string `json:"text"`
}

func toDocument(m domain.Message) storedDocument {
	r := record.FromMessage(m)
	text := []string{}
	for _, v := range []string{m.Path, m.Request.Body, m.Response.Body} {
		if v != "" {
			text = append(text, headOf(v, domain.SearchedBodyBytes))
		}
	}
	for _, side := range []record.Content{r.Request, r.Response} {
		for _, h := range side.Headers {
			for _, v := range h.Values {
				if v != "" {
					text = append(text, headOf(v, domain.SearchedBodyBytes))
				}
			}
		}
	}
	return storedDocument{Record: r, Text: text}
}

// encodeReference writes values as json.Encoder wrote them into bulk bodies: one
// line each, without HTML escaping.
func encodeReference(t testing.TB, values ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// referenceBulk is the bulk body json.Encoder writes for msgs: the record,
// with the full-text field in the indices legacy names.
func referenceBulk(t testing.TB, names indexNames, legacy map[string]bool, msgs []domain.Message) []byte {
	var lines []any
	for _, m := range msgs {
		index := names.For(m.CreatedAt)
		var doc any = record.FromMessage(m)
		if legacy[index] {
			doc = toDocument(m)
		}
		lines = append(lines, bulkAction{Create: bulkTarget{Index: index, ID: m.ID}}, doc)
	}
	return encodeReference(t, lines...)
}

// documentStrings need every escaping rule of encoding/json.
var documentStrings = []string{
	"", "plain", `quote " and backslash \`, "\x00\x01\x1f controls", "\x7f DEL", "<script>&amp;</script>",
	"line\u2028separator\u2029paragraph", "emoji 🚀 and é", "bad \xff byte", "\xed\xa0\x80 surrogate",
	`{"json":"body","n":[1,2,3]}`, "tab\tnewline\ncr\rbackspace\bformfeed\f",
}

func documentMessages() []domain.Message {
	at := time.Date(2025, 3, 14, 12, 0, 0, 123456000, time.UTC)
	var msgs []domain.Message
	for i, s := range documentStrings {
		msgs = append(msgs, domain.Message{
			ID: "id" + s, Reference: s, Account: s, Domain: s, Name: s, IPAddress: s, Method: s, Path: s, StatusCode: 100 + i,
			Request:  domain.Content{Header: domain.Header{s: {s, "v"}, "Empty": {}, "Nil": nil}, Body: s, ContentType: s, Size: len(s)},
			Response: domain.Content{Body: s + s, Size: 2 * len(s)},
			Duration: time.Duration(i*i*i) * 1234567 * time.Microsecond, HasDuration: i%3 != 1,
			CreatedAt: at.AddDate(0, 0, i), UpdatedAt: at, VisibleAt: at.Add(time.Second), ExpiresAt: at.AddDate(0, 1, 0),
		})
	}
	// Bodies past the searched length, cut inside a two-byte character.
	long := "x" + strings.Repeat("é", domain.SearchedBodyBytes)
	msgs = append(msgs, domain.Message{ID: "long", Path: "/long?q=1", Request: domain.Content{Body: long, Size: len(long)},
		Response: domain.Content{Header: domain.Header{"X-Long": {long}}, Body: long[1:]}, Duration: domain.MaxDuration, HasDuration: true,
		CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at})
	many := domain.Header{}
	for i := range 100 { // more names than appendContent sorts on the stack
		many[fmt.Sprintf("X-%03d", 100-i)] = []string{strings.Repeat("v", i)}
	}
	msgs = append(msgs, domain.Message{ID: "many", Request: domain.Content{Header: many},
		CreatedAt: time.Unix(0, 0), UpdatedAt: time.Unix(0, 0), VisibleAt: time.Unix(0, 0), ExpiresAt: maxStorableTime})
	return msgs
}

func TestAppendDocumentMatchesEncodingJSON(t *testing.T) {
	for _, m := range documentMessages() {
		if got, want := append(appendDocument(nil, m), '\n'), encodeReference(t, record.FromMessage(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q:\n got %s\nwant %s", m.ID, got, want)
		}
		if got, want := append(appendDocumentWithText(nil, m), '\n'), encodeReference(t, toDocument(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q with the full-text field:\n got %s\nwant %s", m.ID, got, want)
		}
	}
}

// Documents carry the full-text field exactly in the indices the store knows
// as created before in-place indexing, or does not know yet.
func TestEncodeBulkMatchesEncodingJSON(t *testing.T) {
	s, err := newUnopened(Config{Addresses: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := documentMessages()
	legacy := map[string]bool{}
	for i, m := range msgs {
		index := s.names.For(m.CreatedAt)
		switch i % 3 {
		case 0:
			legacy[index] = true
			s.layouts.learn(index, true)
		case 1:
			s.layouts.learn(index, false)
		default: // not known: the full-text field, which either layout takes
			legacy[index] = true
		}
	}
	if len(legacy) == 0 || len(legacy) == len(msgs) {
		t.Fatalf("%d of %d messages' indices are legacy: the test needs both kinds", len(legacy), len(msgs))
	}
	body, ends, err := s.encodeBulk(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceBulk(t, s.names, legacy, msgs); !bytes.Equal(body, want) {
		t.Fatalf("bulk body:\n got %s\nwant %s", body, want)
	}
	for i, m := range msgs {
		if end, want := ends[i], len(referenceBulk(t, s.names, legacy, msgs[:i+1])); end != want {
			t.Errorf("message %d (%q) ends at %d, want %d", i, m.ID, end, want)
		}
	}
}

func FuzzAppendDocument(f *testing.F) {
	for i, s := range documentStrings {
		f.Add(s, s+"body", "Name-"+s, s, 200+i, int64(i)*1e12)
	}
	f.Fuzz(func(t *testing.T, text, body, headerName, headerValue string, status int, createdMicro int64) {
		at := time.UnixMicro(createdMicro)
		m := domain.Message{
			ID: text, Reference: body, Account: text, Domain: headerValue, Name: headerName, IPAddress: text,
			Method: text, Path: body, StatusCode: status,
			Request: domain.Content{Header: domain.Header{headerName: {headerValue, text}, headerValue: nil, text: {}},
				Body: body, ContentType: text},
			Response:  domain.Content{Header: domain.Header{headerValue: {body}}, Body: body + text, ContentType: headerValue},
			CreatedAt: at, UpdatedAt: at.Add(time.Duration(status)), VisibleAt: at, ExpiresAt: at.Add(time.Hour),
		}
		if got, want := append(appendDocument(nil, m), '\n'), encodeReference(t, record.FromMessage(m)); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		if got, want := append(appendDocumentWithText(nil, m), '\n'), encodeReference(t, toDocument(m)); !bytes.Equal(got, want) {
			t.Fatalf("with the full-text field:\n got %s\nwant %s", got, want)
		}
	})
}

// The full-text field of a legacy index holds exactly the texts q searches, each cut to the
// searched length on a character boundary.
func TestSearchedTextsAreTheDomainsTexts(t *testing.T) {
	for _, m := range documentMessages() {
		var want, got []string
		domain.SearchedTexts(m, func(text string) bool {
			if text != "" {
				if len(text) > domain.SearchedBodyBytes {
					//lint:ignore SA1011 the cutset is the byte 0xc3: the start of a sequence cut in two
					text = strings.TrimRight(text[:domain.SearchedBodyBytes], "\xc3")
				}
				want = append(want, text)
			}
			return true
		})
		searchedTexts(m, func(text string) { got = append(got, text) })
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("message %q: full-text values %.80q, want %.80q", m.ID, got, want)
		}
	}
}

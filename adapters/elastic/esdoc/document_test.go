package esdoc

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// The reference encoding: the structs encoding/json writes; the hand-written
// encoder must produce the same bytes. record_test.go checks the record
// alone (Append); these check the full-text field after it.

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

func TestAppendWithTextMatchesEncodingJSON(t *testing.T) {
	for _, m := range fixtures.EdgeMessages(MaxStorableTime) {
		if got, want := append(AppendWithText(nil, m), '\n'), encodeReference(t, toDocument(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q with the full-text field:\n got %s\nwant %s", m.ID, got, want)
		}
	}
}

// A bulk entry is the create action, then the document as its index's layout
// takes it.
func TestAppendCreate(t *testing.T) {
	type target struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
	}
	for _, m := range fixtures.EdgeMessages(MaxStorableTime) {
		action := map[string]target{"create": {Index: "reqlog-messages-2025.03.14", ID: m.ID}}
		if got, want := AppendCreate(nil, "reqlog-messages-2025.03.14", false, m), encodeReference(t, action, record.FromMessage(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q:\n got %s\nwant %s", m.ID, got, want)
		}
		if got, want := AppendCreate(nil, "reqlog-messages-2025.03.14", true, m), encodeReference(t, action, toDocument(m)); !bytes.Equal(got, want) {
			t.Errorf("message %q with the full-text field:\n got %s\nwant %s", m.ID, got, want)
		}
	}
}

func FuzzAppendWithText(f *testing.F) {
	for i, s := range fixtures.Strings {
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
		if got, want := append(AppendWithText(nil, m), '\n'), encodeReference(t, toDocument(m)); !bytes.Equal(got, want) {
			t.Fatalf("with the full-text field:\n got %s\nwant %s", got, want)
		}
	})
}

// The full-text field of a legacy index holds exactly the texts q searches, each cut to the
// searched length on a character boundary.
func TestSearchedTextsAreTheDomainsTexts(t *testing.T) {
	for _, m := range fixtures.EdgeMessages(MaxStorableTime) {
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

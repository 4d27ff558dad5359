package sqlite_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// dictionaryMessages are n messages with JSON bodies, one in ten of the
// canary's subject (its value in a header and in the body), created from
// start a microsecond apart.
func dictionaryMessages(t *testing.T, start time.Time, n int) (all, subject []domain.Message) {
	t.Helper()
	for i := range n {
		m := newMessage(t, start.Add(time.Duration(i)*time.Microsecond), 0)
		email := fmt.Sprintf("someone-%d@example.com", i)
		if i%10 == 0 {
			email = canary
			m.Subjects = []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"}
			subject = append(subject, m)
		}
		m.Request.Header = domain.Header{"X-User-Email": {email}, "Accept": {"application/json"}}
		m.Request.Body = fmt.Sprintf(`{"email":%q,"order":{"id":"ord_%06d","total":%d.5,"items":["a","b"]},"gift":false}`, email, i, i)
		m.Response.Body = fmt.Sprintf(`{"ok":true,"order_id":"ord_%06d","note":%q}`, i, strings.Repeat("lorem ipsum ", i%7))
		all = append(all, m)
	}
	return all, subject
}

// appendInHundreds appends msgs in transactions of 100.
func appendInHundreds(t *testing.T, s *sqlite.Store, msgs []domain.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i += 100 {
		if err := s.Append(opCtx(t), msgs[i:min(i+100, len(msgs))]); err != nil {
			t.Fatal(err)
		}
	}
}

// codingsOf counts the rows of the day file at path by their content's
// coding byte (0: NULL, text), and returns its dictionaries' contents.
func codingsOf(t *testing.T, path string) (codings map[byte]int, dictionaries [][]byte) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	codings = map[byte]int{}
	rows, err := db.Query(`SELECT coalesce(substr(content, 1, 1), X'00') FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c []byte
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		codings[c[0]]++
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query(`SELECT content FROM dictionaries`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		dictionaries = append(dictionaries, d)
	}
	return codings, dictionaries
}

// readsAsStored checks that Get and List return each of want as it was
// submitted.
func readsAsStored(t *testing.T, s *sqlite.Store, want []domain.Message) {
	t.Helper()
	now := time.Now().Add(time.Hour)
	byID := map[string]domain.Message{}
	for _, m := range want {
		byID[m.ID] = m
		if got, err := s.Get(opCtx(t), scope, m.ID, now); err != nil || !domain.SameSubmission(got, m) {
			t.Fatalf("Get(%s) = %v; want it as stored", m.ID, err)
		}
	}
	listed := listAll(t, s, domain.Query{Scope: scope, Limit: 100}, now, func(got domain.Message) {
		if w, ok := byID[got.ID]; !ok || !domain.SameSubmission(got, w) {
			t.Fatalf("List returned %s not as stored", got.ID)
		}
	})
	if listed != len(want) {
		t.Fatalf("List read %d messages; want %d", listed, len(want))
	}
}

// storedWithDictionary stores 300 dictionaryMessages in a new data
// directory, in transactions of 100, each read back as stored, and closes
// the store; it returns the directory, the day file and the messages.
func storedWithDictionary(t *testing.T) (dir, path string, msgs, subject []domain.Message) {
	t.Helper()
	dir = t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	msgs, subject = dictionaryMessages(t, start, 300)
	appendInHundreds(t, s, msgs)
	readsAsStored(t, s, msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "messages-"+start.Format("2006-01-02")+".db"), msgs, subject
}

// A day file makes its dictionary once it holds 200 messages, from their
// skeletons: it holds names and punctuation, no header or JSON value. The
// rows before it stay in coding 1, those after are in coding 2, and all
// read as stored; an erasure leaves no byte of the subject's value in the
// data directory, dictionary included.
func TestDictionaryHoldsNoValueAndErasureLeavesNoByte(t *testing.T) {
	dir, path, msgs, subject := storedWithDictionary(t)
	codings, dicts := codingsOf(t, path)
	if codings[1] != 200 || codings[2] != 100 || len(dicts) != 1 {
		t.Fatalf("rows by coding %v, %d dictionaries; want 200 in coding 1, 100 in coding 2, one dictionary", codings, len(dicts))
	}
	for _, value := range []string{canary, "someone-", "ord_", "lorem", "application/json", "12.5"} {
		if bytes.Contains(dicts[0], []byte(value)) {
			t.Errorf("the dictionary holds the value %q", value)
		}
	}
	for _, name := range []string{`"X-User-Email"`, `"order_id"`} {
		if !bytes.Contains(dicts[0], []byte(name)) {
			t.Errorf("the dictionary lacks the name %s: it would not pay", name)
		}
	}

	s := mustOpen(t, sqlite.Config{Dir: dir})
	readsAsStored(t, s, msgs)
	eraseLeavingNoCanary(t, s, dir, subject)
	var others []domain.Message
	for _, m := range msgs {
		if len(m.Subjects) == 0 {
			others = append(others, m)
		}
	}
	readsAsStored(t, s, others)
}

// A day file of version 9 (rows in coding 1, no dictionaries table) is
// migrated: its rows read as stored, and the next Append makes its
// dictionary and writes coding 2.
func TestVersion9DayFileGetsADictionary(t *testing.T) {
	dir := t.TempDir()
	before, err := sqlite.NewWithLayout(opCtx(t), sqlite.Config{Dir: dir}, dayfile.Layout{NoDictionary: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	msgs, _ := dictionaryMessages(t, start, 260)
	appendInHundreds(t, before, msgs[:250])
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "messages-"+start.Format("2006-01-02")+".db")
	takeBack(t, dir, path, undoVersion10, 9)

	s := mustOpen(t, sqlite.Config{Dir: dir})
	readsAsStored(t, s, msgs[:250])
	appendInHundreds(t, s, msgs[250:])
	readsAsStored(t, s, msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if codings, dicts := codingsOf(t, path); codings[1] != 250 || codings[2] != 10 || len(dicts) != 1 {
		t.Errorf("rows by coding %v, %d dictionaries; want 250 in coding 1, 10 in coding 2, one dictionary", codings, len(dicts))
	}
}

// A dictionary lost from its file, or corrupt, fails the reads of the rows
// written with it, each naming the message and saying corrupt; the rows
// written before it still read.
func TestLostOrCorruptDictionaryNamesTheMessage(t *testing.T) {
	for name, hurt := range map[string]string{
		"lost":    `DELETE FROM dictionaries`,
		"corrupt": `UPDATE dictionaries SET content = zeroblob(length(content))`,
	} {
		t.Run(name, func(t *testing.T) {
			dir, path, msgs, _ := storedWithDictionary(t)
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(hurt); err != nil {
				t.Fatal(err)
			}
			db.Close()

			s := mustOpen(t, sqlite.Config{Dir: dir})
			now := time.Now().Add(time.Hour)
			hurtRow := msgs[250]
			if _, err := s.Get(opCtx(t), scope, hurtRow.ID, now); err == nil || !strings.Contains(err.Error(), hurtRow.ID) || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("Get of a message written with the %s dictionary = %v; want an error naming %s and saying corrupt", name, err, hurtRow.ID)
			}
			if got, err := s.Get(opCtx(t), scope, msgs[10].ID, now); err != nil || !domain.SameSubmission(got, msgs[10]) {
				t.Errorf("Get of a message written before the dictionary = %v; want it as stored", err)
			}
		})
	}
}

// A corrupt row among those a dictionary is made of does not stop the
// appends: the dictionary is made of the others.
func TestCorruptRowDoesNotStopTheDictionary(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	msgs, _ := dictionaryMessages(t, start, 300)
	appendInHundreds(t, s, msgs[:200])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "messages-"+start.Format("2006-01-02")+".db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET content = X'01FF' WHERE id = ?`, msgs[3].ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = mustOpen(t, sqlite.Config{Dir: dir})
	appendInHundreds(t, s, msgs[200:])
	for _, m := range msgs[200:] {
		if got, err := s.Get(opCtx(t), scope, m.ID, time.Now().Add(time.Hour)); err != nil || !domain.SameSubmission(got, m) {
			t.Fatalf("Get(%s) = %v; want it as stored", m.ID, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if codings, dicts := codingsOf(t, path); codings[2] != 100 || len(dicts) != 1 || len(dicts[0]) == 0 {
		t.Errorf("rows by coding %v, %d dictionaries; want the 100 appended in coding 2 with one dictionary", codings, len(dicts))
	}
}

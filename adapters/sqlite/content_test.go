package sqlite_test

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// bodiesHardToStore are the request and response bodies a compressing
// store could get wrong: random bytes and gzipped texts (which do not
// compress), 5 MiB of text and 5 MiB of one byte (which inflates 5 MiB
// from a few hundred bytes).
func bodiesHardToStore(t *testing.T) map[string][2]string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() string {
		b := make([]byte, 64<<10)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	gzipped := func(text string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var text strings.Builder
	text.WriteString("needle ")
	for text.Len() < 5<<20 {
		fmt.Fprintf(&text, `{"id":%d,"total":12.5,"customer":"ada@example.com"} `, rng.IntN(1_000_000))
	}
	return map[string][2]string{
		"random":        {random(), random()},
		"gzipped":       {gzipped(random()), gzipped(text.String()[:1<<20])},
		"5MiB text":     {text.String()[:5<<20], `{"ok":true}`},
		"5MiB one byte": {strings.Repeat("x", 5<<20), strings.Repeat("y", 5<<20)},
	}
}

// Every read returns the headers and bodies stored, byte for byte, whether
// the store compressed them or kept them as text; an incompressible body
// is kept as text, and a body of one byte takes a few hundred bytes.
func TestBodiesReadBackByteForByte(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	created := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	stored, names := map[string]domain.Message{}, map[string]string{}
	var msgs []domain.Message
	for name, bodies := range bodiesHardToStore(t) {
		m := newMessage(t, created.Add(time.Duration(len(msgs))*time.Microsecond), 0)
		m.Request.Body, m.Response.Body = bodies[0], bodies[1]
		m.Request.Header = domain.Header{"X-Body": {name}, "Accept": {"*/*", "application/json"}, "X-Empty": {}}
		stored[m.ID], names[m.ID] = m, name
		msgs = append(msgs, m)
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Hour)
	same := func(how string, got domain.Message) {
		t.Helper()
		want, ok := stored[got.ID]
		if !ok {
			t.Fatalf("%s returned a message never stored: %s", how, got.ID)
		}
		if !domain.SameSubmission(got, want) {
			t.Errorf("%s of the %s bodies: request body %d bytes, response %d, headers %v; want %d, %d, %v",
				how, names[got.ID], len(got.Request.Body), len(got.Response.Body), got.Request.Header,
				len(want.Request.Body), len(want.Response.Body), want.Request.Header)
		}
	}
	for _, m := range msgs {
		for _, key := range []string{m.ID, m.Reference} {
			got, err := s.Get(opCtx(t), scope, key, now)
			if err != nil {
				t.Fatal(err)
			}
			same("Get", got)
		}
	}
	// Pages as an export reads them: a page holds at most domain.PageBytes.
	if listed := listAll(t, s, domain.Query{Scope: scope, Limit: 10}, now, func(m domain.Message) { same("List", m) }); listed != len(msgs) {
		t.Fatalf("List's pages hold %d messages; want %d", listed, len(msgs))
	}
	found, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: "needle"}}, now)
	if err != nil || len(found.Messages) != 1 {
		t.Fatalf("List with q=needle = %d messages, %v; want the 5 MiB text", len(found.Messages), err)
	}
	same("List with q", found.Messages[0])
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	looked, err := s.Lookup(opCtx(t), scope, ids)
	if err != nil || len(looked) != len(msgs) {
		t.Fatalf("Lookup = %d messages, %v; want %d", len(looked), err, len(msgs))
	}
	for _, m := range looked {
		same("Lookup", m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	sizes := map[string]int{}
	for id, size := range contentSizes(t, filepath.Join(dir, "messages-"+created.Format("2006-01-02")+".db")) {
		sizes[names[id]] = size
	}
	if size := sizes["random"]; size != 0 {
		t.Errorf("the random bodies' content is %d bytes; want none (NULL): they do not compress", size)
	}
	if size := sizes["5MiB one byte"]; size == 0 || size > 4096 {
		t.Errorf("the one-byte bodies' content is %d bytes; want them compressed to a few hundred", size)
	}
	if size := sizes["5MiB text"]; size == 0 || size > 3<<20 {
		t.Errorf("the 5 MiB text's content is %d bytes; want it compressed", size)
	}
}

// contentSizes reads the length of each message's content in the day file
// at path, by id: 0 for NULL, when its texts are stored as they are.
func contentSizes(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, coalesce(length(content), 0) FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sizes := map[string]int{}
	for rows.Next() {
		var id string
		var size int
		if err := rows.Scan(&id, &size); err != nil {
			t.Fatal(err)
		}
		sizes[id] = size
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sizes
}

// A compressed value that does not read is an error of the read naming
// the message and saying what is wrong, not a panic nor a message with
// other bytes; the file's other messages still read.
func TestCorruptContentNamesTheMessage(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	created := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	hurt, whole := newMessage(t, created, 4000), newMessage(t, created.Add(time.Microsecond), 4000)
	if err := s.Append(opCtx(t), []domain.Message{hurt, whole}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "messages-"+created.Format("2006-01-02")+".db"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE messages SET content = substr(content, 1, length(content) / 2) || X'00' || substr(content, length(content) / 2 + 2)
		WHERE id = ? AND content IS NOT NULL`, hurt.ID)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("corrupting the message's content: %d rows, %v", n, err)
	}
	db.Close()

	s = mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().Add(time.Hour)
	_, err = s.Get(opCtx(t), scope, hurt.ID, now)
	if err == nil || !strings.Contains(err.Error(), hurt.ID) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Get of the corrupt message = %v; want an error naming %s and saying corrupt", err, hurt.ID)
	}
	if _, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now); err == nil || !strings.Contains(err.Error(), hurt.ID) {
		t.Errorf("List over the corrupt message = %v; want an error naming %s", err, hurt.ID)
	}
	if got, err := s.Get(opCtx(t), scope, whole.ID, now); err != nil || !domain.SameSubmission(got, whole) {
		t.Errorf("Get of the other message = %v; want it as stored", err)
	}
}

// A day file of schema version 6 gets the content column: the messages it
// held read as they were stored, as text, and those stored after them are
// compressed, in the same file.
func TestVersion6DayFileKeepsItsTextRows(t *testing.T) {
	dir, day := seeded(t)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(undoVersion8 + `ALTER TABLE messages DROP COLUMN content; PRAGMA user_version=6`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	writeFile(t, filepath.Join(dir, "reqlog-store.json"), []byte(`{"store":"reqlog-sqlite","schema_version":6}`))

	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().Add(time.Hour)
	page, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now)
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("List after the migration = %d messages, %v; want the one stored", len(page.Messages), err)
	}
	old := page.Messages[0]
	if want := strings.Repeat("lorem ipsum ", 100/12+1)[:100]; old.Response.Body != want {
		t.Errorf("the message stored as text reads %q; want %q", old.Response.Body, want)
	}
	added := newMessage(t, old.CreatedAt.Add(time.Microsecond), 5000)
	if err := s.Append(opCtx(t), []domain.Message{added}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []domain.Message{old, added} {
		if got, err := s.Get(opCtx(t), scope, want.ID, now); err != nil || !domain.SameSubmission(got, want) {
			t.Errorf("Get(%s) after the migration = %v; want it as stored", want.ID, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sizes := contentSizes(t, day)
	if sizes[old.ID] != 0 || sizes[added.ID] == 0 {
		t.Errorf("content lengths: the older message %d, the one added %d; want none (text) and some", sizes[old.ID], sizes[added.ID])
	}
}

// A re-scrub's rewrite stores a message's headers and bodies as Append
// does, whatever form the row held them in: a row stored as text gets a
// compressed value, a compressed row a new one, and a row whose new bodies
// do not compress its text columns, its old value gone (NULL), which reads
// would otherwise prefer. The old words, read from the inflated message,
// leave the word index.
func TestRewriteStoresRowsAsAppendDoes(t *testing.T) {
	const canary = "cnryrw4e1b"
	dir := t.TempDir()
	created := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	withCanary := func(m domain.Message) domain.Message {
		m.Request.Header = domain.Header{"X-Partner": {canary}}
		m.Request.Body = `{"email":"` + canary + `@example.com","note":"` + strings.Repeat("lorem ipsum ", 50) + `"}`
		return m
	}
	plain, err := sqlite.NewWithLayout(opCtx(t), sqlite.Config{Dir: dir}, dayfile.Layout{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	asText := withCanary(newMessage(t, created, 2000))
	if err := plain.Append(opCtx(t), []domain.Message{asText}); err != nil {
		t.Fatal(err)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, sqlite.Config{Dir: dir})
	packed := withCanary(newMessage(t, created.Add(time.Microsecond), 2000))
	toRandom := withCanary(newMessage(t, created.Add(2*time.Microsecond), 2000))
	if err := s.Append(opCtx(t), []domain.Message{packed, toRandom}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "messages-"+created.Format("2006-01-02")+".db")
	if sizes := contentSizes(t, path); sizes[asText.ID] != 0 || sizes[packed.ID] == 0 || sizes[toRandom.ID] == 0 {
		t.Fatalf("content lengths before the rewrite: %v; want the first as text, the others compressed", sizes)
	}

	scrub := func(m domain.Message) domain.Message {
		m = m.Clone()
		m.Request.Header = domain.Header{"X-Partner": {"hash:0011"}}
		m.Request.Body = strings.ReplaceAll(m.Request.Body, canary, "scrubbed")
		m.Rules = domain.RulesRecord{Rescrubbed: 1, Changes: []domain.RuleChange{{Rule: "mails", Field: "request.body"}}}
		return m
	}
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 16<<10)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	want := []domain.Message{scrub(asText), scrub(packed), scrub(toRandom)}
	want[2].Request.Body, want[2].Response.Body = string(noise[:8<<10]), string(noise[8<<10:])
	if err := s.RewriteMessages(opCtx(t), want); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Hour)
	for _, w := range want {
		got, err := s.Get(opCtx(t), scope, w.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Request.Body != w.Request.Body || got.Response.Body != w.Response.Body ||
			fmt.Sprint(got.Request.Header) != fmt.Sprint(w.Request.Header) || got.Rules.Rescrubbed != 1 {
			t.Errorf("Get(%s) after the rewrite: header %v, request body %.60q (%d bytes); want %v, %.60q (%d bytes)",
				w.ID, got.Request.Header, got.Request.Body, len(got.Request.Body), w.Request.Header, w.Request.Body, len(w.Request.Body))
		}
	}
	for q, n := range map[string]int{canary: 0, "scrubbed": 2} {
		if found, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: q}}, now); err != nil || len(found.Messages) != n {
			t.Errorf("List with q=%s after the rewrite = %d messages, %v; want %d", q, len(found.Messages), err, n)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if sizes := contentSizes(t, path); sizes[asText.ID] == 0 || sizes[packed.ID] == 0 || sizes[toRandom.ID] != 0 {
		t.Errorf("content lengths after the rewrite: %v; want the first two compressed, the random bodies as text", sizes)
	}
}

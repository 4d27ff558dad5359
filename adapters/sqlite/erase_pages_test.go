package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// A search of the data directory's bytes for the canary cannot see it in a
// row compressed with the file's dictionary, nor in the word index, whose
// segments store each token prefix-compressed after the one before. These
// tests look at a day file as SQLite and reqlog read it: every free page
// (read from the file's header and freelist, as the SQLite file format lays
// them out), the word index asked for the canary's tokens, and every row
// decoded.

// dayFilePaths are the paths of the day files of dir.
func dayFilePaths(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "messages-*.db"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no day file in %s (%v)", dir, err)
	}
	return paths
}

// freePagesHoldingBytes returns the free pages of the SQLite file at path
// that hold a byte other than zero: a leaf page anywhere, a trunk page
// past its list of leaves. The file must be whole (its WAL checkpointed).
func freePagesHoldingBytes(t *testing.T, path string) (free int, holding []uint32) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 100 {
		t.Fatalf("%s: %d bytes, no SQLite header", path, len(data))
	}
	pageSize := int(binary.BigEndian.Uint16(data[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	page := func(n uint32) []byte {
		if n == 0 || int(n)*pageSize > len(data) {
			t.Fatalf("%s: free page %d beyond its %d bytes", path, n, len(data))
		}
		return data[int(n-1)*pageSize : int(n)*pageSize]
	}
	zero := func(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }
	count := int(binary.BigEndian.Uint32(data[36:40]))
	for trunk := binary.BigEndian.Uint32(data[32:36]); trunk != 0; {
		p := page(trunk)
		leaves := int(binary.BigEndian.Uint32(p[4:8]))
		if 8+4*leaves > pageSize {
			t.Fatalf("%s: freelist trunk page %d lists %d leaves", path, trunk, leaves)
		}
		free++
		if !zero(p[8+4*leaves:]) {
			holding = append(holding, trunk)
		}
		for i := range leaves {
			leaf := binary.BigEndian.Uint32(p[8+4*i:])
			free++
			if !zero(page(leaf)) {
				holding = append(holding, leaf)
			}
		}
		trunk = binary.BigEndian.Uint32(p[0:4])
		if free > count {
			t.Fatalf("%s: the freelist holds more than the %d pages its header counts", path, count)
		}
	}
	if free != count {
		t.Fatalf("%s: the freelist holds %d pages, its header counts %d", path, free, count)
	}
	return free, holding
}

// openReadOnly opens the SQLite file at path read-only; the caller closes
// it, before the store closes (the last connection checkpoints the WAL).
func openReadOnly(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // the temp vocabulary table lives on one connection
	return db
}

// canaryWords are words only the canary's messages hold.
var canaryWords = []string{"canary", "7f3a9c"}

// wordIndexHolding returns how the word index of the day file at path
// answers for the canary's words: the messages a MATCH of each token finds,
// and the tokens FTS5's vocabulary of the index (fts5vocab, which reads its
// segments) still lists.
func wordIndexHolding(t *testing.T, path string) (matched int, listed []string) {
	t.Helper()
	db := openReadOnly(t, path)
	defer db.Close()
	if _, err := db.Exec(`CREATE VIRTUAL TABLE temp.vocabulary USING fts5vocab(main, words, row)`); err != nil {
		t.Fatal(err)
	}
	for _, w := range canaryWords {
		token, _ := dayfile.Words(w)
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM words WHERE words MATCH ?`, token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		matched += n
		if err := db.QueryRow(`SELECT count(*) FROM temp.vocabulary WHERE term = ?`, token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			listed = append(listed, w+" ("+token+")")
		}
	}
	return matched, listed
}

// rowsHoldingCanary decodes every row of the day file at path: each
// message as reqlog reads it (its headers and bodies inflated, with the
// file's dictionary), hidden or not, and each row of every other table but
// the word index's, column by column; it returns those holding the canary.
func rowsHoldingCanary(t *testing.T, path string) (holding []string) {
	t.Helper()
	ctx := opCtx(t)
	db := openReadOnly(t, path)
	defer db.Close()
	reader, err := dayfile.NewRowReader(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT `+dayfile.MessageColumns+` FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		m, err := reader.ScanMessage(rows)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(m)
		if bytes.Contains(raw, []byte(canary)) {
			holding = append(holding, "message "+m.ID)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	tables, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'words%' AND name <> 'messages'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var name string
		if err := tables.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	tables.Close()
	for _, name := range names {
		holding = append(holding, columnsHolding(t, db, name, canary)...)
	}
	return holding
}

// columnsHolding returns the rows of table whose value in some column
// holds needle, as text or blob.
func columnsHolding(t *testing.T, db *sql.DB, table, needle string) (holding []string) {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for n := 0; rows.Next(); n++ {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			if strings.Contains(fmt.Sprint(v), needle) || bytes.Contains(asBytes(v), []byte(needle)) {
				holding = append(holding, fmt.Sprintf("%s row %d column %s", table, n, cols[i]))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return holding
}

func asBytes(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

// canaryMessages appends n messages, a tenth of them the subject's with
// the canary in a header and a JSON body that does not compress (stored
// over pages of its own), the others JSON of many sizes; past the 200th
// the rows are compressed with the file's dictionary. It returns the
// subject's messages.
func canaryMessages(t *testing.T, s *sqlite.Store, start time.Time, n int) (subject []domain.Message) {
	t.Helper()
	msgs := make([]domain.Message, n)
	for i := range msgs {
		m := newMessage(t, start.Add(time.Duration(i)*time.Second), 0)
		m.Response.Body = `{"items":[` + strings.Repeat(`{"id":1,"name":"lorem ipsum dolor"},`, (i*7919)%90) + `{}],"total":` + fmt.Sprint(i) + `}`
		if i%10 == 3 {
			m.Subjects = []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"}
			m.Request.Header = domain.Header{"X-User-Email": {canary}}
			m.Request.Body = `{"email":"` + canary + `","note":"` + randomLetters(i, 60_000+100*i) + `"}`
			subject = append(subject, m)
		}
		msgs[i] = m
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	return subject
}

// randomLetters are size letters drawn from n: one word, which compresses
// to about 60 % of it.
func randomLetters(n, size int) string {
	rng := rand.New(rand.NewPCG(uint64(n), 41))
	letters := make([]byte, size)
	for i := range letters {
		letters[i] = byte('a' + rng.IntN(26))
	}
	return string(letters)
}

// After an erasure no free page of a day file holds a byte, the word index
// knows none of the canary's tokens, and no row holds the canary once
// decoded; nor does any byte of the data directory, WAL included.
func TestAnErasureLeavesNoFreePageWordOrRowOfTheCanary(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	subject := canaryMessages(t, s, time.Now().UTC().Add(-3*time.Hour), 300)
	reopen := func() {
		t.Helper()
		if err := s.Close(); err != nil { // the WAL checkpointed: the file whole
			t.Fatal(err)
		}
		s = mustOpen(t, sqlite.Config{Dir: dir})
	}
	// Each look sees the canary before the erasure, else it proves nothing.
	reopen()
	for _, path := range dayFilePaths(t, dir) {
		matched, _ := wordIndexHolding(t, path)
		if rows := rowsHoldingCanary(t, path); len(rows) < len(subject) || matched == 0 {
			t.Fatalf("before the erasure %d rows and %d word index matches hold the canary: the test proves nothing", len(rows), matched)
		}
	}
	ctx := opCtx(t)
	if n, err := s.Hide(ctx, scope.Account, refsOf(subject)); err != nil || n != int64(len(subject)) {
		t.Fatalf("Hide = %d, %v; want %d", n, err, len(subject))
	}
	// Hiding rewrites each row (a shorter expiry): the pages of a row's old
	// body are freed as they are, by the writer's secure_delete FAST.
	reopen()
	for _, path := range dayFilePaths(t, dir) {
		if _, holding := freePagesHoldingBytes(t, path); len(holding) == 0 {
			t.Fatal("no free page holds a byte after Hide: the test proves nothing")
		}
	}
	if n, err := s.Delete(ctx, scope.Account, refsOf(subject)); err != nil || n != int64(len(subject)) {
		t.Fatalf("Delete = %d, %v; want %d", n, err, len(subject))
	}
	if err := s.Expunge(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range dayFilePaths(t, dir) {
		name := filepath.Base(path)
		if free, holding := freePagesHoldingBytes(t, path); len(holding) > 0 {
			t.Errorf("%s: %d of its %d free pages hold bytes after the erasure: %v", name, len(holding), free, holding)
		}
		if matched, listed := wordIndexHolding(t, path); matched > 0 || len(listed) > 0 {
			t.Errorf("%s: the word index matches %d messages of the canary's words and lists %v after the erasure", name, matched, listed)
		}
		if holding := rowsHoldingCanary(t, path); len(holding) > 0 {
			t.Errorf("%s: rows hold the canary after the erasure: %v", name, holding)
		}
	}
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) > 0 {
		t.Errorf("the canary is still in %v after the erasure", holding)
	}
	if got, want := countListed(t, s, domain.Filter{}, time.Now()), 300-len(subject); got != want {
		t.Errorf("List after the erasure = %d messages; want %d", got, want)
	}
}

// A day file of version 11 that holds messages is migrated owing its free
// pages zeroed (an erasure of that version may have left them holding
// bytes), and the next expunge zeroes them though no erasure deleted from
// it since; then it owes none.
func TestAnOlderDayFileHasItsFreePagesZeroedAtTheNextExpunge(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	subject := canaryMessages(t, s, time.Now().UTC().Add(-3*time.Hour), 300)
	if _, err := s.Hide(opCtx(t), scope.Account, refsOf(subject)); err != nil { // free pages holding bytes
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := dayFilePaths(t, dir)[0]
	if _, holding := freePagesHoldingBytes(t, path); len(holding) == 0 {
		t.Fatal("no free page holds a byte: the test proves nothing")
	}
	takeBack(t, dir, path, undoVersion12, 11)
	freeOwed := func() (owed int) {
		t.Helper()
		db := openReadOnly(t, path)
		defer db.Close()
		if err := db.QueryRow(`SELECT free_owed FROM erasure`).Scan(&owed); err != nil {
			t.Fatal(err)
		}
		return owed
	}

	s = mustOpen(t, sqlite.Config{Dir: dir})
	if owed := freeOwed(); owed != 1 {
		t.Fatalf("a day file migrated from version 11 has free_owed %d, want 1", owed)
	}
	if err := s.Expunge(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if owed := freeOwed(); owed != 0 {
		t.Errorf("after the expunge free_owed is %d, want 0", owed)
	}
	if free, holding := freePagesHoldingBytes(t, path); len(holding) > 0 {
		t.Errorf("%d of the %d free pages hold bytes after the expunge: %v", len(holding), free, holding)
	}
	if got, want := countListed(t, s, domain.Filter{}, time.Now()), 300-len(subject); got != want {
		t.Errorf("List after the expunge = %d messages; want %d", got, want)
	}
}

package dayfile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A subject's messages are found from the subject index, by seq, whatever
// else the query narrows by: never by walking the account's messages (a
// million of them a day, for the 50 a subject has).
func TestSubjectsAreFoundByTheIndexNotByTheAccount(t *testing.T) {
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(time.Now())}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	after := &domain.Cursor{CreatedAt: time.Now(), ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"}
	for _, q := range []ports.SubjectQuery{
		{Account: "acme", Hashes: []string{"0a"}, Limit: 100},
		{Account: "acme", Domain: domain.DomainLive, Hashes: []string{"0a", "0b"}, CreatedBefore: time.Now(), After: after, Limit: 500},
	} {
		query, args := subjectsQuery(q)
		rows, err := f.Read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)") ||
			!strings.Contains(text, "SCAN words VIRTUAL TABLE") || !strings.Contains(text, "SEARCH subjects USING PRIMARY KEY (hash=?)") {
			t.Errorf("the plan of %+v: %s; want messages searched by rowid from the subject index", q, text)
		}
	}
}

// An Append indexes every message's hashes under its seq, in the word
// index (none in the subjects table), however many the batch holds, and a
// hash a message lists twice once.
func TestAppendIndexesEverySubjectOfABatch(t *testing.T) {
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	now := time.Now()
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(now)}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	msgs := make([]domain.Message, 300)
	for i := range msgs {
		own := fmt.Sprintf("%032x", i)
		msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%012d", i), Account: "acme", Domain: domain.DomainLive,
			Name: "shop", Method: "GET", Path: "/", StatusCode: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			Subjects: []string{own, "shared", own}}
	}
	if err := f.Append(t.Context(), msgs, false); err != nil {
		t.Fatal(err)
	}
	var rows, tableRows int
	if err := f.Read.QueryRowContext(t.Context(), `SELECT count(*), (SELECT count(*) FROM subjects) FROM words WHERE words MATCH ?`,
		subjectMatch([]string{"shared"})).Scan(&rows, &tableRows); err != nil {
		t.Fatal(err)
	}
	if rows != len(msgs) || tableRows != 0 {
		t.Errorf("the word index holds the shared subject under %d messages, the subjects table %d rows; want %d and none", rows, tableRows, len(msgs))
	}
	for _, i := range []int{0, 127, 128, 299} {
		_, hashes, found, err := f.MessageSubjects(t.Context(), "acme", msgs[i].ID)
		if err != nil || !found {
			t.Fatalf("message %d: found %v, %v", i, found, err)
		}
		slices.Sort(hashes)
		if want := []string{fmt.Sprintf("%032x", i), "shared"}; !slices.Equal(hashes, want) {
			t.Errorf("message %d's subjects are %v, want %v", i, hashes, want)
		}
	}
	shared, err := f.Subjects(t.Context(), ports.SubjectQuery{Account: "acme", Hashes: []string{"shared"}, Limit: 1000})
	if err != nil || len(shared) != len(msgs) {
		t.Errorf("the shared subject finds %d messages (%v), want %d", len(shared), err, len(msgs))
	}
	if none, err := f.Subjects(t.Context(), ports.SubjectQuery{Account: "acme", Limit: 1000}); err != nil || len(none) != 0 {
		t.Errorf("no subject finds %d messages (%v), want none", len(none), err)
	}
}

// A subject token is never a word's: it is not tokenLetters long, it is
// letters and digits alone in lower case (so the ascii tokenizer keeps it
// whole), and it names one hash, whatever string a caller gives as one.
func TestSubjectTokensAreNeverWords(t *testing.T) {
	hashes := []string{"0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF", "shared", "", "0a", "abcdefgh",
		"zzzzzzzz", "z6162", "ab", "0123456789abcdef0123456789abcdeg", "é", "a b"}
	for i := range 200 {
		hashes = append(hashes, fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15), strings.Repeat("x", i))
	}
	byToken := map[string]string{}
	for _, h := range hashes {
		token := string(appendSubjectToken(nil, h))
		if len(token) == tokenLetters || strings.Trim(token, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Errorf("hash %q has the token %q: a word's length, or a byte the tokenizer splits or folds", h, token)
		}
		if back, err := hashOfSubjectToken(token); err != nil || back != h {
			t.Errorf("the token %q of %q reads back as %q, %v", token, h, back, err)
		}
		if other, seen := byToken[token]; seen && other != h {
			t.Errorf("%q and %q share the token %q", other, h, token)
		}
		byToken[token] = h
	}
	// In a file: a message whose text holds a hash as a word is not found
	// by the hash, nor one indexed under a hash by a q of that word.
	f := todaysFile(t)
	now := time.Now()
	texts := []string{"abcdefgh 0123456789abcdef0123456789abcdef", ""}
	subjects := [][]string{nil, {"abcdefgh", "0123456789abcdef0123456789abcdef"}}
	msgs := make([]domain.Message, 2)
	for i := range msgs {
		msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%012d", i), Account: "acme", Domain: domain.DomainLive,
			Name: "shop", Method: "GET", Path: "/", StatusCode: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			Request: domain.Content{Body: texts[i]}, Subjects: subjects[i]}
	}
	if err := f.Append(t.Context(), msgs, true); err != nil {
		t.Fatal(err)
	}
	for _, word := range subjects[1] {
		refs, err := f.Subjects(t.Context(), ports.SubjectQuery{Account: "acme", Hashes: []string{word}, Limit: 10})
		if err != nil || len(refs) != 1 || refs[0].ID != msgs[1].ID {
			t.Errorf("the subject %q finds %v (%v), want the message indexed under it alone", word, refs, err)
		}
		tokens, _ := Words(word)
		seqs, _, err := wordCandidates(t.Context(), f.Read, tokens, 10)
		if err != nil || !slices.Equal(seqs, []int64{1}) {
			t.Errorf("the word %q finds the seqs %v (%v), want the message holding it alone", word, seqs, err)
		}
	}
}

// todaysFile is today's day file of a new directory, of the policy's
// retention class, held until t ends.
func todaysFile(t *testing.T) *File { return todaysClassFile(t, domain.RetentionClass{}) }

// todaysClassFile is todaysFile of class.
func todaysClassFile(t *testing.T, class domain.RetentionClass) *File {
	t.Helper()
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(time.Now()), Class: ClassName(class)}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Release)
	return f
}

// A message's subjects stay in the word index with it through a backfill,
// a re-scrub's rewrite and the taking out of its bodies, each of which
// deletes its entry and writes it again; and an erasure then leaves none
// of its terms: after the merge the index holds the other message's alone,
// which a 'delete' given other terms than the entry's would not.
func TestSubjectsFollowTheirMessageThroughEveryRewriteOfItsEntry(t *testing.T) {
	f := todaysClassFile(t, domain.RetentionClass{Account: "acme", Rule: "short-bodies"}) // ClearBodies is a class file's
	ctx := t.Context()
	now := time.Now()
	const kept, erased, added = "0000000000000000000000000000000a", "0000000000000000000000000000000b", "backfilled"
	msgs := []domain.Message{
		{ID: "0190a0b0-c0d0-7e0f-8a0b-000000000001", Request: domain.Content{Body: "kept words"}, Subjects: []string{kept}},
		{ID: "0190a0b0-c0d0-7e0f-8a0b-000000000002", Request: domain.Content{Body: "secret canary"}, Subjects: []string{erased}},
	}
	for i := range msgs {
		msgs[i].Account, msgs[i].Domain, msgs[i].Name, msgs[i].Method, msgs[i].Path = "acme", domain.DomainLive, "shop", "GET", "/orders"
		msgs[i].StatusCode, msgs[i].CreatedAt, msgs[i].ExpiresAt = 200, now, now.Add(time.Hour)
		msgs[i].Request.Header, msgs[i].Response.Header, msgs[i].RetentionRule = domain.Header{}, domain.Header{}, "short-bodies"
	}
	if err := f.Append(ctx, msgs, true); err != nil {
		t.Fatal(err)
	}
	found := func(step, hash string, want int) {
		t.Helper()
		refs, err := f.Subjects(ctx, ports.SubjectQuery{Account: "acme", Hashes: []string{hash}, Limit: 10})
		if err != nil || len(refs) != want {
			t.Errorf("%s: the subject %q finds %v (%v), want %d", step, hash, refs, err, want)
		}
	}
	entry := ports.SubjectEntry{Ref: ports.SubjectRef{ID: msgs[1].ID, CreatedAt: now}, Hashes: []string{added, erased}}
	if n, err := f.IndexSubjects(ctx, "acme", []ports.SubjectEntry{entry}, true); err != nil || n != 1 {
		t.Fatalf("IndexSubjects = %d, %v; want the message found", n, err)
	}
	if _, hashes, _, err := f.MessageSubjects(ctx, "acme", msgs[1].ID); err != nil || !slices.Equal(hashes, []string{erased, added}) {
		t.Errorf("after the backfill the message's subjects are %q (%v), want %q", hashes, err, []string{erased, added})
	}
	found("backfill", added, 1)
	rescrubbed := msgs[1]
	rescrubbed.Request.Body = "redacted canary"
	if _, err := f.Rewrite(ctx, []domain.Message{rescrubbed}); err != nil {
		t.Fatal(err)
	}
	found("rewrite", added, 1)
	found("rewrite", erased, 1)
	if _, err := f.ClearBodies(ctx); err != nil {
		t.Fatal(err)
	}
	found("bodies taken out", added, 1)
	found("bodies taken out", kept, 1)
	if n, err := f.Erase(ctx, "acme", []string{msgs[1].ID}, true); err != nil || n != 1 {
		t.Fatalf("Erase = %d, %v", n, err)
	}
	if err := f.MergeErasedWords(ctx); err != nil {
		t.Fatal(err)
	}
	found("erased", added, 0)
	found("erased", erased, 0)
	conn, err := f.Write.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, words, row)`); err != nil {
		t.Fatal(err)
	}
	var terms []string
	rows, err := conn.QueryContext(ctx, `SELECT term FROM temp.terms ORDER BY term`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term string
		if err := rows.Scan(&term); err != nil {
			t.Fatal(err)
		}
		terms = append(terms, term)
	}
	rows.Close()
	keptMessage := msgs[0]
	keptMessage.Request.Body = ""
	var words wordTokens
	want := strings.Fields(string(indexedText(nil, words.of(keptMessage), kept)))
	slices.Sort(want)
	if !slices.Equal(terms, want) {
		t.Errorf("the word index holds %q after the erasure, want the kept message's terms %q", terms, want)
	}
}

package dayfile

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

// The subject index holds each subject hash of a message under its seq:
// since schema version 13 as a term of the word index (words), a subject
// token, beside the message's words, and in its row's subject_tokens; in a
// file written before, as rows of the subjects table (day-6.sql), which
// every reader still reads (nothing writes it now). Erasures read it by
// hash (Subjects), hide the messages it finds (Hide: their expires set to
// erasure.HiddenExpiry, which every read honours) and delete them with
// their index entries (Erase).
//
// Why the word index: FTS5 gathers a transaction's terms in memory and
// writes them as one segment, in term order, merged with the others later;
// the subjects table, keyed by hash, put each message's hashes on a leaf
// page of their own, which a commit wrote whole to the WAL (a 32 KiB page a
// message: docs/benchmarks.md, "Erasures: ingest with three subject keys").

// appendSubjectToken appends the word index's term for a subject hash: the hash
// itself when it is 32 lower-case hex digits (rules.SubjectHash's form),
// otherwise 'z' and the hash's bytes in hex. Either is letters and digits
// alone, lower case, so the index's ascii tokenizer reads it as one token
// unchanged; and neither is ever a word's token, which is tokenLetters (8)
// long: a hash's is 32 long, the other an odd length. The two forms never
// meet (the second holds a 'z', the first cannot), so a token names one
// hash (TestSubjectTokensAreNeverWords).
func appendSubjectToken(dst []byte, hash string) []byte {
	if isHexHash(hash) {
		return append(dst, hash...)
	}
	dst = append(dst, 'z')
	return hex.AppendEncode(dst, []byte(hash))
}

// subjectHashLen is the length of rules.SubjectHash's hashes.
const subjectHashLen = 32

// isHexHash reports whether hash is subjectHashLen lower-case hex digits.
func isHexHash(hash string) bool {
	if len(hash) != subjectHashLen {
		return false
	}
	for i := 0; i < len(hash); i++ {
		if c := hash[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// hashOfSubjectToken is the hash appendSubjectToken made token of.
func hashOfSubjectToken(token string) (string, error) {
	if len(token) > 0 && token[0] == 'z' {
		raw, err := hex.DecodeString(token[1:])
		return string(raw), err
	}
	if !isHexHash(token) {
		return "", fmt.Errorf("%q is not a subject token", token)
	}
	return token, nil
}

// appendSubjectTokens appends the tokens of hashes, each once, separated
// by spaces, after a space unless dst is empty.
func appendSubjectTokens(dst []byte, hashes []string) []byte {
	for i, h := range hashes {
		if slices.Contains(hashes[:i], h) {
			continue
		}
		if len(dst) > 0 {
			dst = append(dst, ' ')
		}
		dst = appendSubjectToken(dst, h)
	}
	return dst
}

// subjectMatch is the word index query of the messages indexed under any of
// hashes: their tokens joined by OR (lower case, never an FTS5 keyword).
func subjectMatch(hashes []string) string {
	return strings.ReplaceAll(string(appendSubjectTokens(nil, hashes)), " ", " OR ") // a token holds no space
}

// subjectSeqs is the subquery of the seqs of the messages indexed under
// any of hashes, in the word index or (a file written before version 13)
// the subjects table; its arguments are subjectSeqsArgs(hashes).
const subjectSeqs = `SELECT rowid FROM words WHERE words MATCH ? UNION ALL SELECT seq FROM subjects WHERE hash IN (SELECT value FROM json_each(?))`

func subjectSeqsArgs(hashes []string) []any { return []any{subjectMatch(hashes), jsonList(hashes)} }

// indexedText is what the word index holds of a stored message: its words'
// tokens (when the file indexes words) and its subject tokens, as its row's
// subject_tokens holds them ("" for none).
func indexedText(dst []byte, words []byte, subjectTokens string) []byte {
	dst = append(dst[:0], words...)
	if subjectTokens != "" {
		if len(dst) > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, subjectTokens...)
	}
	return dst
}

// subjectWhere selects the rows of q's Account, Domain and CreatedBefore
// that index (a "key IN (subquery)" term of args) says are of one of
// q.Hashes. The index's keys drive it: the other terms are written
// +column, not to be answered by an index, as the planner would otherwise
// walk every row of the account (messages_name: it has no statistics) and
// test each against the index.
func subjectWhere(index string, args []any, q ports.SubjectQuery) *Where {
	w := &Where{}
	w.Add(index, args...)
	w.Add("+account = ?", q.Account)
	if q.Domain != "" {
		w.Add("+domain = ?", q.Domain)
	}
	if !q.CreatedBefore.IsZero() {
		w.Add("+created <= ?", q.CreatedBefore.UnixMicro())
	}
	return w
}

// Subjects returns the file's messages q selects (its Account, Domain,
// Hashes, CreatedBefore and After), newest first, at most q.Limit.
func (f *File) Subjects(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	if len(q.Hashes) == 0 {
		return nil, nil // no subject: none (an empty MATCH is an FTS5 syntax error)
	}
	query, args := subjectsQuery(q)
	rows, err := f.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, f.Error(ctx, "subject messages", err)
	}
	defer rows.Close()
	var refs []ports.SubjectRef
	for rows.Next() {
		var r ports.SubjectRef
		var created int64
		if err := rows.Scan(&r.ID, &r.Domain, &created); err != nil {
			return nil, f.Error(ctx, "subject messages", err)
		}
		r.CreatedAt, r.Partition = time.UnixMicro(created).UTC(), f.Name()
		refs = append(refs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, f.Error(ctx, "subject messages", err)
	}
	return refs, nil
}

// MessageSubjects returns the ref of account's message id and the hashes
// the subject index holds for it; found is false when the file holds no
// such message.
func (f *File) MessageSubjects(ctx context.Context, account, id string) (ref ports.SubjectRef, hashes []string, found bool, err error) {
	var seq, created int64
	var tokens sql.NullString
	err = f.Read.QueryRowContext(ctx, `SELECT seq, domain, created, subject_tokens FROM messages INDEXED BY messages_id WHERE id = ? AND account = ?`,
		id, account).Scan(&seq, &ref.Domain, &created, &tokens)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.SubjectRef{}, nil, false, nil
	}
	if err != nil {
		return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
	}
	ref.ID, ref.CreatedAt, ref.Partition = id, time.UnixMicro(created).UTC(), f.Name()
	if hashes, err = hashesOfTokens(tokens.String); err != nil {
		return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
	}
	rows, err := f.Read.QueryContext(ctx, `SELECT hash FROM subjects WHERE seq = ?`, seq) // a file written before version 13
	if err != nil {
		return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
		}
		hashes = append(hashes, h)
	}
	if err := rows.Err(); err != nil {
		return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
	}
	slices.Sort(hashes)
	return ref, slices.Compact(hashes), true, nil
}

// hashesOfTokens are the hashes of a row's subject_tokens.
func hashesOfTokens(tokens string) ([]string, error) {
	var hashes []string
	for token := range strings.FieldsSeq(tokens) {
		h, err := hashOfSubjectToken(token)
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
	return hashes, nil
}

// IndexSubjects adds entries' hashes to the subject index of account's
// messages among them, in one transaction, and returns how many of the
// messages the file holds. A contentless word index changes a row's terms
// only by a 'delete' of those it holds and an insert of the new: all the
// deletes first, by seq, then the inserts, as FTS5 flushes what it buffered
// at each rowid lower than the last or each change between the two (twice
// a batch, not twice a message). The deletes are tombstones (the index's
// secure-delete off, as Erase's): the tokens they delete are written again.
// wordIndexed says the file's messages were written with their words.
func (f *File) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry, wordIndexed bool) (int64, error) {
	added := map[string][]string{}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Ref.ID
		added[e.Ref.ID] = append(added[e.Ref.ID], e.Hashes...)
	}
	dicts, err := f.dictionaries(ctx)
	if err != nil {
		return 0, f.Error(ctx, "index subjects", err)
	}
	tx, err := f.Write.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return 0, f.Error(ctx, "index subjects: begin", err)
	}
	defer tx.Rollback()
	msgs, err := readByIDs(ctx, tx, dicts.byID, account, ids)
	if err != nil {
		return 0, f.Error(ctx, "index subjects", err)
	}
	var changed []storedMessage
	var now []string // the subject tokens of changed
	for _, m := range msgs {
		tokens := string(appendSubjectTokens([]byte(m.subjectTokens), added[m.ID]))
		if tokens != m.subjectTokens {
			changed, now = append(changed, m), append(now, tokens)
		}
	}
	if len(changed) > 0 {
		if err := reindexSubjects(ctx, tx, changed, now, wordIndexed); err != nil {
			return 0, f.Error(ctx, "index subjects", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, f.Error(ctx, "index subjects: commit", err)
	}
	return int64(len(msgs)), nil
}

// reindexSubjects gives msgs (by seq) the subject tokens now: their rows'
// subject_tokens and their word index entries, deleted and written again.
func reindexSubjects(ctx context.Context, tx *sql.Tx, msgs []storedMessage, now []string, wordIndexed bool) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO words(words, rank) VALUES ('secure-delete', 0)`); err != nil {
		return err
	}
	if err := deleteWords(ctx, tx, msgs, wordIndexed); err != nil {
		return fmt.Errorf("words: %w", err)
	}
	update, err := tx.PrepareContext(ctx, `UPDATE messages SET subject_tokens = ? WHERE seq = ?`)
	if err != nil {
		return err
	}
	defer update.Close()
	for i := range msgs {
		msgs[i].subjectTokens = now[i]
		if _, err := update.ExecContext(ctx, now[i], msgs[i].seq); err != nil {
			return err
		}
	}
	return writeWords(ctx, tx, msgs, wordIndexed)
}

// subjectsQuery is the query of Subjects.
func subjectsQuery(q ports.SubjectQuery) (string, []any) {
	w := subjectWhere("seq IN ("+subjectSeqs+")", subjectSeqsArgs(q.Hashes), q)
	if q.After != nil {
		at := q.After.CreatedAt.UnixMicro()
		w.Add("(+created < ? OR +created = ? AND +id < ?)", at, at, q.After.ID)
	}
	return `SELECT id, domain, created FROM messages WHERE ` + w.String() + ` ORDER BY created DESC, id DESC LIMIT ?`, append(w.Args, q.Limit)
}

// Hide gives account's messages ids the expiry erasure.HiddenExpiry, in one
// transaction, and returns how many it holds.
func (f *File) Hide(ctx context.Context, account string, ids []string) (int64, error) {
	res, err := f.Write.ExecContext(ctx, `UPDATE messages SET expires = ? WHERE account = ? AND id IN (SELECT value FROM json_each(?))`,
		erasure.HiddenExpiry.UnixMicro(), account, jsonList(ids))
	if err != nil {
		return 0, f.Error(ctx, "hide", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, f.Error(ctx, "hide", err)
	}
	return n, nil
}

// Erase deletes account's messages ids with their word and subject index
// entries, in one transaction with secure_delete on (sqlitedb.SecureTx):
// what they held is overwritten, in the file and in what the WAL will
// write to it, not left in free space; their words are tombstones until
// MergeErasedWords, and the pages appends freed before hold their bytes
// until ZeroFreePages.
// wordIndexed says the file's messages were written with their words. It
// returns how many it deleted.
func (f *File) Erase(ctx context.Context, account string, ids []string, wordIndexed bool) (int64, error) {
	var deleted int64
	dicts, err := f.dictionaries(ctx)
	if err != nil {
		return 0, f.Error(ctx, "erase", err)
	}
	err = sqlitedb.SecureTx(ctx, f.Write, func(tx *sql.Tx) error {
		gone, err := readByIDs(ctx, tx, dicts.byID, account, ids)
		if err != nil || len(gone) == 0 {
			return err
		}
		if err := unindexWords(ctx, tx, gone, wordIndexed); err != nil {
			return fmt.Errorf("words: %w", err)
		}
		for _, m := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM subjects WHERE seq = ?`, m.seq); err != nil {
				return fmt.Errorf("subjects: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE seq = ?`, m.seq); err != nil {
				return err
			}
		}
		deleted = int64(len(gone))
		if _, err := tx.ExecContext(ctx, `UPDATE day SET messages = messages - ?`, deleted); err != nil {
			return err
		}
		return oweFreePages(ctx, tx)
	})
	if err != nil {
		return 0, f.Error(ctx, "erase", err)
	}
	f.added(-deleted, 0) // the file's count, as the day row's
	if deleted > 0 {
		if err := f.vacuumIfOlder(ctx); err != nil {
			return deleted, f.Error(ctx, "erase: vacuum", err)
		}
	}
	return deleted, nil
}

// vacuumIfOlder rebuilds a file written before schema version 6 (its
// erasure.vacuum_first set) at its first erasure: its pages' free space may
// hold copies of what was erased, which only a VACUUM's fresh file leaves
// behind. It blocks the file's writes meanwhile; files written since need
// none.
func (f *File) vacuumIfOlder(ctx context.Context) error {
	var vacuumFirst bool
	if err := f.Write.QueryRowContext(ctx, `SELECT vacuum_first FROM erasure`).Scan(&vacuumFirst); err != nil || !vacuumFirst {
		return err
	}
	if _, err := f.Write.ExecContext(ctx, `VACUUM`); err != nil {
		return err
	}
	_, err := f.Write.ExecContext(ctx, `UPDATE erasure SET vacuum_first = 0`)
	return err
}

// storedMessage is a message, its seq and its subject_tokens.
type storedMessage struct {
	seq           int64
	subjectTokens string
	domain.Message
}

// readByIDs reads account's messages ids that the file holds, by seq.
func readByIDs(ctx context.Context, tx *sql.Tx, dicts dictionaries, account string, ids []string) ([]storedMessage, error) {
	// By seq: FTS5 buffers deletes of rising rowids and flushes them
	// together, but flushes before each one lower than the last, and a
	// secure-delete flush walks the doclist of every token it holds.
	rows, err := tx.QueryContext(ctx, `SELECT seq, `+MessageColumns+`, coalesce(subject_tokens, '') FROM messages WHERE account = ? AND id IN (SELECT value FROM json_each(?))
		ORDER BY seq`, account, jsonList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedMessage
	for rows.Next() {
		var m storedMessage
		var err error
		if m.Message, err = scanMessage(seqScanner{rows, &m.seq}, dicts.get, &m.subjectTokens); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// seqScanner scans a row of seq then MessageColumns.
type seqScanner struct {
	rows *sql.Rows
	seq  *int64
}

func (s seqScanner) Scan(dest ...any) error { return s.rows.Scan(append([]any{s.seq}, dest...)...) }

// unindexWords takes msgs' tokens out of the word index: a contentless FTS5
// table forgets a row only by its 'delete' command given the tokens it was
// given, which wordTokens makes again from the message. The deletes are
// tombstones (the table's secure-delete option off: it is persistent, and
// a re-scrub sets it on), which leave the tokens in the older segments;
// the file then owes an 'optimize' (erasure.words_owed), which
// MergeErasedWords does once per file at the erasure job's expunge.
// Deleting each entry in place instead (secure-delete on) seeks every
// token's doclist in every segment: about 20 ms a message at 50,000
// messages a file; and an optimize in every step's transaction held the
// file's ingest for the whole rewrite of its index, step after step
// (docs/benchmarks.md, "Erasures").
func unindexWords(ctx context.Context, tx *sql.Tx, msgs []storedMessage, wordIndexed bool) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO words(words, rank) VALUES ('secure-delete', 0)`); err != nil {
		return err
	}
	if err := deleteWords(ctx, tx, msgs, wordIndexed); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE erasure SET words_owed = 1`)
	return err
}

// MergeErasedWords merges the word index into one segment without the
// entries erasures deleted, when they left some (erasure.words_owed): FTS5's
// 'optimize', in a transaction with secure_delete on, so that the old
// segments' pages, which hold the erased messages' tokens, are overwritten
// with zeros as they are freed. Ingest into the file waits for it, once.
func (f *File) MergeErasedWords(ctx context.Context) error {
	var owed bool
	if err := f.Write.QueryRowContext(ctx, `SELECT words_owed FROM erasure`).Scan(&owed); err != nil || !owed {
		return err
	}
	return sqlitedb.SecureTx(ctx, f.Write, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO words(words) VALUES ('optimize')`); err != nil {
			return fmt.Errorf("merge the word index: %w", err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE erasure SET words_owed = 0`)
		return err
	})
}

// deleteWords gives the word index a 'delete' of each message's terms
// (indexedText): its words' tokens when wordIndexed, its subject tokens.
func deleteWords(ctx context.Context, tx *sql.Tx, msgs []storedMessage, wordIndexed bool) error {
	return eachIndexed(ctx, tx, `INSERT INTO words(words, rowid, w) VALUES ('delete', ?, ?)`, msgs, wordIndexed)
}

// writeWords inserts each message's terms into the word index.
func writeWords(ctx context.Context, tx *sql.Tx, msgs []storedMessage, wordIndexed bool) error {
	return eachIndexed(ctx, tx, insertWordsQuery, msgs, wordIndexed)
}

// eachIndexed runs query, of a seq and a message's terms, for each of msgs
// the word index holds: every one when wordIndexed, else those with subject
// tokens (an Append without words writes no entry for the others).
func eachIndexed(ctx context.Context, tx *sql.Tx, query string, msgs []storedMessage, wordIndexed bool) error {
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	var (
		words wordTokens
		text  []byte
	)
	for _, m := range msgs {
		if !wordIndexed && m.subjectTokens == "" {
			continue
		}
		var tokens []byte
		if wordIndexed {
			tokens = words.of(m.Message)
		}
		text = indexedText(text, tokens, m.subjectTokens)
		if _, err := stmt.ExecContext(ctx, m.seq, text); err != nil {
			return err
		}
	}
	return nil
}

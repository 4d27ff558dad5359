package dayfile

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

// The subject index (day-6.sql) holds each subject hash of a message under
// its seq. Erasures read it by hash (Subjects), hide the messages it finds
// (Hide: their expires set to erasure.HiddenExpiry, which every read
// honours) and delete them with their index entries (Erase).

// subjectWriter gathers the subject hashes of an Append's messages and
// inserts them at its end, many rows a statement: a statement a row costs
// more than the row.
type subjectWriter struct {
	rows []any // hash, seq, hash, seq...
}

// subjectRowsPerInsert is how many rows one INSERT of flush holds.
const subjectRowsPerInsert = 64

func (w *subjectWriter) add(seq int64, hashes []string) {
	for _, h := range hashes {
		w.rows = append(w.rows, h, seq)
	}
}

// flush inserts the rows gathered, in tx, by one statement prepared once:
// the last insert repeats the last row to fill it, which OR IGNORE skips.
func (w *subjectWriter) flush(ctx context.Context, tx *sql.Tx, stmts *statements) error {
	if len(w.rows) == 0 {
		return nil
	}
	for len(w.rows)%(2*subjectRowsPerInsert) != 0 {
		w.rows = append(w.rows, w.rows[len(w.rows)-2:len(w.rows)]...)
	}
	stmt, err := stmts.in(ctx, tx, insertSubjectsQuery())
	if err != nil {
		return err
	}
	defer stmt.Close()
	for rows := w.rows; len(rows) > 0; rows = rows[2*subjectRowsPerInsert:] {
		if _, err := stmt.ExecContext(ctx, rows[:2*subjectRowsPerInsert]...); err != nil {
			return err
		}
	}
	w.rows = w.rows[:0]
	return nil
}

// subjectWhere selects the rows of q's Account, Domain and CreatedBefore
// whose key is in index (a "key IN (SELECT key FROM table" to close)
// under one of q.Hashes. The index's keys drive it: the other terms are
// written +column, not to be answered by an index, as the planner would
// otherwise walk every row of the account (messages_name: it has no
// statistics) and test each against the index.
func subjectWhere(index string, q ports.SubjectQuery) *Where {
	w := &Where{}
	w.Add(index+" WHERE hash IN (SELECT value FROM json_each(?)))", jsonList(q.Hashes))
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
	err = f.Read.QueryRowContext(ctx, `SELECT seq, domain, created FROM messages INDEXED BY messages_id WHERE id = ? AND account = ?`,
		id, account).Scan(&seq, &ref.Domain, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.SubjectRef{}, nil, false, nil
	}
	if err != nil {
		return ports.SubjectRef{}, nil, false, f.Error(ctx, "message subjects", err)
	}
	ref.ID, ref.CreatedAt, ref.Partition = id, time.UnixMicro(created).UTC(), f.Name()
	rows, err := f.Read.QueryContext(ctx, `SELECT hash FROM subjects WHERE seq = ? ORDER BY hash`, seq)
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
	return ref, hashes, true, nil
}

// IndexSubjects adds entries' hashes to the subject index of account's
// messages among them, in one statement, and returns how many of the
// messages the file holds.
func (f *File) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry) (int64, error) {
	type pair = [2]string
	var pairs []pair
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Ref.ID
		for _, h := range e.Hashes {
			pairs = append(pairs, pair{e.Ref.ID, h})
		}
	}
	raw, _ := json.Marshal(pairs) // strings always encode
	if _, err := f.Write.ExecContext(ctx, `INSERT OR IGNORE INTO subjects(hash, seq)
		SELECT json_extract(p.value, '$[1]'), m.seq FROM json_each(?) AS p
		JOIN messages AS m INDEXED BY messages_id ON m.id = json_extract(p.value, '$[0]') WHERE m.account = ?`, string(raw), account); err != nil {
		return 0, f.Error(ctx, "index subjects", err)
	}
	var found int64
	if err := f.Write.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE account = ? AND id IN (SELECT value FROM json_each(?))`,
		account, jsonList(ids)).Scan(&found); err != nil {
		return 0, f.Error(ctx, "index subjects", err)
	}
	return found, nil
}

// subjectsQuery is the query of Subjects.
func subjectsQuery(q ports.SubjectQuery) (string, []any) {
	w := subjectWhere("seq IN (SELECT seq FROM subjects", q)
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
		gone, err := readForErasure(ctx, tx, dicts.byID, account, ids)
		if err != nil || len(gone) == 0 {
			return err
		}
		if wordIndexed {
			if err := unindexWords(ctx, tx, gone); err != nil {
				return fmt.Errorf("words: %w", err)
			}
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

// storedMessage is a message and its seq.
type storedMessage struct {
	seq int64
	domain.Message
}

func readForErasure(ctx context.Context, tx *sql.Tx, dicts dictionaries, account string, ids []string) ([]storedMessage, error) {
	// By seq: FTS5 buffers deletes of rising rowids and flushes them
	// together, but flushes before each one lower than the last, and a
	// secure-delete flush walks the doclist of every token it holds.
	rows, err := tx.QueryContext(ctx, `SELECT seq, `+MessageColumns+` FROM messages WHERE account = ? AND id IN (SELECT value FROM json_each(?))
		ORDER BY seq`, account, jsonList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedMessage
	for rows.Next() {
		var m storedMessage
		var err error
		if m.Message, err = scanMessage(seqScanner{rows, &m.seq}, dicts.get); err != nil {
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
func unindexWords(ctx context.Context, tx *sql.Tx, msgs []storedMessage) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO words(words, rank) VALUES ('secure-delete', 0)`); err != nil {
		return err
	}
	if err := deleteWords(ctx, tx, msgs); err != nil {
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

// deleteWords gives the word index a 'delete' of each message's tokens.
func deleteWords(ctx context.Context, tx *sql.Tx, msgs []storedMessage) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO words(words, rowid, w) VALUES ('delete', ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	var words wordTokens
	for _, m := range msgs {
		if _, err := stmt.ExecContext(ctx, m.seq, words.of(m.Message)); err != nil {
			return err
		}
	}
	return nil
}

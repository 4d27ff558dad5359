package dayfile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// A retention rule's messages are kept in their class's day files, apart
// from the policy's (file.go names them), so that the purge drops a class's
// day whole once the class's current retention has passed it, and takes out
// the bodies of its days past its bodies retention (ClearBodies): a class
// shortened since is purged as its rule now says.

// readClass reads the file's retention class, if it has one.
func (f *File) readClass(ctx context.Context, db *sqlitedb.DB) error {
	var class domain.RetentionClass
	err := db.Write.QueryRowContext(ctx, `SELECT account, rule FROM class`).Scan(&class.Account, &class.Rule)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	f.class.Store(&class)
	return nil
}

// RetentionClass is the class of the file's messages, false for the
// policy's class and a class's file no Append has written yet.
func (f *File) RetentionClass() (domain.RetentionClass, bool) {
	if c := f.class.Load(); c != nil {
		return *c, true
	}
	return domain.RetentionClass{}, false
}

// noteClass records, in an Append's transaction, the class of msgs in a
// class's file that does not know its class yet; it returns it, to keep
// once the transaction commits (nil: nothing to keep).
func (f *File) noteClass(ctx context.Context, tx *sql.Tx, msgs []domain.Message) (*domain.RetentionClass, error) {
	if f.Class == "" || f.class.Load() != nil || len(msgs) == 0 {
		return nil, nil
	}
	class := msgs[0].RetentionClass()
	if _, err := tx.ExecContext(ctx, `INSERT INTO class(account, rule) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM class)`,
		class.Account, class.Rule); err != nil {
		return nil, fmt.Errorf("its retention class: %w", err)
	}
	return &class, nil
}

// clearBodiesPage is how many messages ClearBodies reads at a time.
const clearBodiesPage = 500

// ClearBodies takes out the bodies of the messages the file holds that it
// has not taken out before (seq past class.bodies_cleared), in one
// transaction of the writer: each such row written again without them (as
// an append writes it), the word index rebuilt whole from what is left
// (FTS5's delete-all, then every message's words), bodies_cleared moved
// on. Then the file is rebuilt and its WAL truncated (Expunge), so the
// bodies leave the file's bytes and the space they held goes back to the
// file system, and bodies_expunged says so: a process killed before that
// expunges at the next purge. No secure_delete: VACUUM writes every page
// anew. The caller holds the file. It returns how many messages it
// rewrote.
func (f *File) ClearBodies(ctx context.Context) (int64, error) {
	total := f.messages.Load() // before: a message appended meanwhile is checked next time
	var cleared, expunged int64
	if err := f.Write.QueryRowContext(ctx, `SELECT bodies_cleared, bodies_expunged FROM class`).Scan(&cleared, &expunged); err != nil {
		return 0, f.Error(ctx, "clear bodies", err)
	}
	rewritten, last, err := f.rewriteWithoutBodies(ctx, cleared)
	if err != nil {
		return rewritten, err
	}
	if last > expunged {
		if err := f.Expunge(ctx); err != nil {
			return rewritten, err
		}
		if _, err := f.Write.ExecContext(ctx, `UPDATE class SET bodies_expunged = ?`, last); err != nil {
			return rewritten, f.Error(ctx, "clear bodies", err)
		}
	}
	f.clearedOf.Store(total)
	return rewritten, nil
}

// rewriteWithoutBodies is ClearBodies' transaction over the messages past
// seq cleared; it returns how many it rewrote and bodies_cleared after.
func (f *File) rewriteWithoutBodies(ctx context.Context, cleared int64) (rewritten, last int64, err error) {
	tx, err := f.Write.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return 0, 0, f.Error(ctx, "clear bodies: begin", err)
	}
	defer tx.Rollback()
	var maxSeq int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM messages`).Scan(&maxSeq); err != nil {
		return 0, 0, f.Error(ctx, "clear bodies", err)
	}
	if maxSeq <= cleared {
		return 0, cleared, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO words(words) VALUES ('delete-all')`); err != nil {
		return 0, 0, f.Error(ctx, "clear bodies: the word index", err)
	}
	p, err := f.packer(ctx)
	if err != nil {
		return 0, 0, f.Error(ctx, "clear bodies", err)
	}
	dicts, err := f.dictionaries(ctx)
	if err != nil {
		return 0, 0, f.Error(ctx, "clear bodies", err)
	}
	var (
		words wordTokens
		text  []byte
	)
	for after := int64(0); ; {
		page, seqs, subjectTokens, err := readPage(ctx, tx, dicts.byID, after)
		if err != nil {
			return 0, 0, f.Error(ctx, "clear bodies", err)
		}
		if len(page) == 0 {
			break
		}
		for i, m := range page {
			seq := seqs[i]
			if seq > cleared && (m.Request.Body != "" || m.Response.Body != "") {
				m.Request.Body, m.Response.Body = "", ""
				texts, err := textColumns(m, p)
				if err != nil {
					return 0, 0, err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE messages SET request_header = ?, request_body = ?, response_header = ?,
					response_body = ?, content = ? WHERE seq = ?`, texts.requestHeader, texts.requestBody, texts.responseHeader,
					texts.responseBody, texts.content, seq); err != nil {
					return 0, 0, f.Error(ctx, "clear bodies", fmt.Errorf("message %s: %w", m.ID, err))
				}
				rewritten++
			}
			text = indexedText(text, words.of(m), subjectTokens[i])
			if _, err := tx.ExecContext(ctx, `INSERT INTO words(rowid, w) VALUES (?, ?)`, seq, text); err != nil {
				return 0, 0, f.Error(ctx, "clear bodies: words", fmt.Errorf("message %s: %w", m.ID, err))
			}
		}
		after = seqs[len(seqs)-1]
	}
	if _, err := tx.ExecContext(ctx, `UPDATE class SET bodies_cleared = ?`, maxSeq); err != nil {
		return 0, 0, f.Error(ctx, "clear bodies", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, f.Error(ctx, "clear bodies: commit", err)
	}
	return rewritten, maxSeq, nil
}

// readPage reads up to clearBodiesPage messages of seq past after, by seq,
// their seqs and their subject_tokens.
func readPage(ctx context.Context, tx *sql.Tx, dicts dictionaries, after int64) ([]domain.Message, []int64, []string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+MessageColumns+", seq, coalesce(subject_tokens, '') FROM messages WHERE seq > ? ORDER BY seq LIMIT ?", after, clearBodiesPage)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	var (
		page          []domain.Message
		seqs          []int64
		subjectTokens []string
	)
	for rows.Next() {
		var seq int64
		var tokens string
		m, err := scanMessage(rows, dicts.get, &seq, &tokens)
		if err != nil {
			return nil, nil, nil, err
		}
		page, seqs, subjectTokens = append(page, m), append(seqs, seq), append(subjectTokens, tokens)
	}
	return page, seqs, subjectTokens, rows.Err()
}

// unclearedBodies reports whether messages may have come into the file
// since ClearBodies last took out their bodies.
func (f *File) unclearedBodies() bool { return f.messages.Load() != f.clearedOf.Load() }

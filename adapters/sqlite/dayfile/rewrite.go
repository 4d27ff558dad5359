package dayfile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// A re-scrub rewrites stored messages in place (ports.MessageRewriter), and
// the old values must leave the file's bytes, not only its reads: the
// rewrite runs on the writer connection with secure_delete on (SQLite
// overwrites what it frees with zeros) and the word index's FTS5
// secure-delete option (a deleted entry leaves its segment, no tombstone
// beside it). That is not enough alone: appends ran without secure_delete,
// and a page that split or a cell that moved then left copies of its bytes
// in the free space of pages the rewrite never touches (a test found them).
// So Expunge rebuilds the file (VACUUM: every page written anew, the free
// space empty) and checkpoints the WAL and truncates it, so that the old
// pages it held are gone too.

// Scan returns the file's messages of q's scope created in [q.From, q.To),
// of q.Names (none: all), oldest first by (created, id), strictly after
// q.After when set, at most q.Limit; it walks messages_scope.
func (f *File) Scan(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	var w Where
	w.Add("account = ?", q.Scope.Account)
	w.Add("domain = ?", q.Scope.Domain)
	w.Add("created >= ?", CeilMicro(q.From))
	w.Add("created < ?", CeilMicro(q.To))
	if len(q.Names) > 0 {
		w.Add("name IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Names)), ",")+")", anySlice(q.Names)...)
	}
	if q.After != nil {
		at := q.After.CreatedAt.UnixMicro()
		w.Add("(created > ? OR created = ? AND id > ?)", at, at, q.After.ID)
	}
	rows, err := f.Read.QueryContext(ctx, "SELECT "+MessageColumns+" FROM messages INDEXED BY messages_scope WHERE "+w.String()+
		" ORDER BY created, id LIMIT ?", append(w.Args, q.Limit)...)
	if err != nil {
		return nil, f.Error(ctx, "scan", err)
	}
	defer rows.Close()
	var out []domain.Message
	for rows.Next() {
		m, err := f.ScanMessage(rows)
		if err != nil {
			return nil, f.Error(ctx, "scan", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, f.Error(ctx, "scan", err)
	}
	return out, nil
}

func anySlice(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// Rewrite replaces, of each of msgs the file holds (by id, in its scope),
// the columns privacy rules change and the rules record, and its words, in
// one transaction of the writer with secure_delete on; the rollups of a
// minute whose paths changed are counted again. It returns the messages it
// rewrote.
func (f *File) Rewrite(ctx context.Context, msgs []domain.Message) ([]domain.Message, error) {
	conn, err := f.Write.Conn(ctx)
	if err != nil {
		return nil, f.Error(ctx, "rewrite", err)
	}
	defer conn.Close()
	if err := sqlitedb.SecureDelete(ctx, conn, true); err != nil {
		return nil, f.Error(ctx, "rewrite: secure_delete", err)
	}
	// The writer's later transactions (appends) need not pay for it.
	defer func() { _ = sqlitedb.SecureDelete(context.WithoutCancel(ctx), conn, false) }()
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return nil, f.Error(ctx, "rewrite: begin", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO words(words, rank) VALUES ('secure-delete', 1)`); err != nil {
		return nil, f.Error(ctx, "rewrite: the word index's secure-delete", err)
	}
	p, err := f.packer(ctx)
	if err != nil {
		return nil, f.Error(ctx, "rewrite", err)
	}
	dicts, err := f.dictionaries(ctx)
	if err != nil {
		return nil, f.Error(ctx, "rewrite", err)
	}
	rewritten, err := rewriteRows(ctx, tx, msgs, p, dicts.byID)
	if err != nil {
		return nil, f.Error(ctx, "rewrite", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, f.Error(ctx, "rewrite: commit", err)
	}
	return rewritten, nil
}

// rewriteRows rewrites the stored rows of msgs and their words, and counts
// again the rollups of the minutes whose paths changed. The headers and
// bodies are written as Append writes them (textColumns, compressed by p),
// whatever form the row held them in: a compressed row's old value is
// replaced, not left beside new text its reads would ignore.
func rewriteRows(ctx context.Context, tx *sql.Tx, msgs []domain.Message, p *packer, dicts dictionaries) ([]domain.Message, error) {
	var (
		rewritten      []domain.Message
		words          wordTokens
		text           []byte
		pathsChangedIn = map[rollupKey]bool{}
	)
	for _, m := range msgs {
		var seq int64
		var subjectTokens string
		old, err := scanMessage(tx.QueryRowContext(ctx, "SELECT "+MessageColumns+", seq, coalesce(subject_tokens, '') FROM messages WHERE id = ? AND account = ? AND domain = ?",
			m.ID, m.Account, m.Domain), dicts.get, &seq, &subjectTokens)
		if errors.Is(err, sql.ErrNoRows) {
			continue // not stored here: never stored again
		}
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", m.ID, err)
		}
		// A contentless index deletes a row given the tokens it was given:
		// those of the message as stored, which scanMessage inflated, and
		// its subject tokens, which the rewrite keeps.
		text = indexedText(text, words.of(old), subjectTokens)
		if _, err := tx.ExecContext(ctx, `INSERT INTO words(words, rowid, w) VALUES ('delete', ?, ?)`, seq, text); err != nil {
			return nil, fmt.Errorf("message %s: words: %w", m.ID, err)
		}
		now := old
		now.IPAddress, now.Path, now.Request.Header, now.Request.Body = m.IPAddress, m.Path, m.Request.Header, m.Request.Body
		now.Response.Header, now.Response.Body, now.Rules = m.Response.Header, m.Response.Body, m.Rules
		texts, err := textColumns(now, p)
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET ip_address = ?, path = ?, request_header = ?, request_body = ?,
			response_header = ?, response_body = ?, content = ?, rules = ? WHERE seq = ?`, now.IPAddress, now.Path,
			texts.requestHeader, texts.requestBody, texts.responseHeader, texts.responseBody, texts.content,
			rulesValue(now.Rules), seq); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.ID, err)
		}
		text = indexedText(text, words.of(now), subjectTokens)
		if _, err := tx.ExecContext(ctx, `INSERT INTO words(rowid, w) VALUES (?, ?)`, seq, text); err != nil {
			return nil, fmt.Errorf("message %s: words: %w", m.ID, err)
		}
		if stats.PathOf(old.Path) != stats.PathOf(now.Path) {
			pathsChangedIn[rollupKeyOf(old)] = true
		}
		rewritten = append(rewritten, now)
	}
	for k := range pathsChangedIn {
		if err := recountRollup(ctx, tx, k, dicts); err != nil {
			return nil, fmt.Errorf("rollup of %s/%s/%s at %d: %w", k.account, k.domain, k.name, k.minute, err)
		}
	}
	return rewritten, nil
}

// recountRollup counts the rollup of k again from the messages stored, so
// that no path a rewrite changed stays in it.
func recountRollup(ctx context.Context, tx *sql.Tx, k rollupKey, dicts dictionaries) error {
	rows, err := tx.QueryContext(ctx, "SELECT "+MessageColumns+` FROM messages INDEXED BY messages_name
		WHERE account = ? AND domain = ? AND name = ? AND created >= ? AND created < ?`,
		k.account, k.domain, k.name, k.minute*1e6, (k.minute+60)*1e6)
	if err != nil {
		return err
	}
	r := &stats.Rollup{}
	for rows.Next() {
		m, err := scanMessage(rows, dicts.get)
		if err != nil {
			rows.Close()
			return err
		}
		r.AddMessage(m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM rollups WHERE account = ? AND domain = ? AND minute = ? AND name = ?`,
		k.account, k.domain, k.minute, k.name); err != nil {
		return err
	}
	return addToRollups(ctx, tx, nil, map[rollupKey]*stats.Rollup{k: r})
}

// Expunge rebuilds the file (VACUUM, on its writer) and then checkpoints
// its WAL into it and truncates the WAL (sqlitedb.TruncateWAL), so that
// neither holds a byte of what a rewrite replaced. VACUUM writes the whole
// file again: it costs about the file's size in writes, once per re-scrub.
func (f *File) Expunge(ctx context.Context) error {
	if _, err := f.Write.ExecContext(ctx, "VACUUM"); err != nil {
		return f.Error(ctx, "expunge: vacuum", err)
	}
	if err := sqlitedb.TruncateWAL(ctx, f.Write, expungeWait); err != nil {
		return f.Error(ctx, "expunge", err)
	}
	return nil
}

// expungeWait bounds how long Expunge waits for readers.
const expungeWait = 10 * time.Second

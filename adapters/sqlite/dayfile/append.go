package dayfile

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// A Group is messages of one part (a day and a retention class), for that
// part's file.
type Group struct {
	Part     Part
	Messages []domain.Message
}

// ByPart splits msgs by their part (PartOf), keeping their order; a batch
// is mostly of one part, which then takes no copy.
func ByPart(msgs []domain.Message) []Group {
	first := PartOf(msgs[0])
	i := 1
	for i < len(msgs) && PartOf(msgs[i]) == first {
		i++
	}
	if i == len(msgs) {
		return []Group{{first, msgs}}
	}
	var groups []Group
	index := map[Part]int{}
	for _, m := range msgs {
		part := PartOf(m)
		g, ok := index[part]
		if !ok {
			g = len(groups)
			index[part] = g
			groups = append(groups, Group{Part: part})
		}
		groups[g].Messages = append(groups[g].Messages, m)
	}
	return groups
}

// Append writes msgs, all of the file's part, and returns nil only once a
// transaction holding them has committed: in WAL mode with
// synchronous=FULL, a commit is on disk. Appends that arrive while the
// file's writer is busy wait, and the first of them then writes them all
// in one transaction (appendQueue): a transaction's cost is mostly its
// own, whatever it holds (about 11 pages of 32 KiB written to the WAL and
// a sync, for 3 messages as for 20: docs/benchmarks.md), and a batch the
// retention classes split over several files left each a few messages.
// A message whose id the file already holds is left as stored (ON
// CONFLICT DO NOTHING), so a retry converges. A file with a fault, or
// found deleted or replaced before the commit or after it, fails with its
// fault: nothing is acknowledged into a file that is no longer the day's
// (faults.go). indexWords is off only in the benchmark that prices the
// word index.
func (f *File) Append(ctx context.Context, msgs []domain.Message, indexWords bool) error {
	if err := f.Fault(); err != nil {
		return err
	}
	req := &appendRequest{ctx: ctx, msgs: msgs, indexWords: indexWords, done: make(chan error, 1)}
	if err := f.appends.wait(ctx, req); err != errYourTurn {
		return err
	}
	batch := f.appends.take(req)
	f.appendAll(ctx, batch)
	f.appends.handOver()
	return <-req.done
}

// appendAll writes the Appends of batch, of the same indexWords, in one
// transaction under the leader's ctx, and answers each. When that fails
// for the data (not transiently) or for the leader's ctx, and the file has
// no fault, each is tried again in a transaction of its own under its own
// ctx, so that one whose messages the file refuses, or whose caller went
// away, fails alone.
func (f *File) appendAll(ctx context.Context, batch []*appendRequest) {
	msgs := batch[0].msgs
	if len(batch) > 1 {
		msgs = nil
		for _, req := range batch {
			msgs = append(msgs, req.msgs...)
		}
	}
	err := f.appendOnce(ctx, msgs, batch[0].indexWords)
	if err != nil && len(batch) > 1 && f.Fault() == nil && (!ports.KindOf(err).Transient() || ctx.Err() != nil) {
		for _, req := range batch {
			req.done <- f.appendOnce(req.ctx, req.msgs, req.indexWords)
		}
		return
	}
	for _, req := range batch {
		req.done <- err
	}
}

// appendOnce writes msgs in one transaction of the file's writer (BEGIN
// IMMEDIATE), and returns nil only once it has committed.
func (f *File) appendOnce(ctx context.Context, msgs []domain.Message, indexWords bool) error {
	if err := f.Fault(); err != nil {
		return err
	}
	stmts := f.appendStatements(ctx)
	tx, err := f.Write.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return f.Error(ctx, "append: begin", err)
	}
	defer tx.Rollback()
	class, err := f.noteClass(ctx, tx, msgs)
	if err != nil {
		return f.Error(ctx, "append", err)
	}
	dict, keepDict, err := f.dictionaryFor(ctx, tx)
	if err != nil {
		return f.Error(ctx, "append", err)
	}
	var p *packer
	if !f.plain {
		p = &packer{dict: dict}
	}
	added, maxExpires, err := insert(ctx, tx, stmts, msgs, p, indexWords)
	if err != nil {
		return f.Error(ctx, "append", err)
	}
	if err := f.unmoved(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return f.Error(ctx, "append: commit", err)
	}
	keepDict()
	if err := f.unmoved(); err != nil {
		return err
	}
	f.added(added, maxExpires)
	if class != nil {
		f.class.Store(class)
	}
	return nil
}

// insert writes each message not yet stored, its headers and bodies
// compressed by p (as text when p is nil), with its words (unless
// indexWords is off) and subject hashes, and each tally not yet stored
// (tallies.go), adds it to the rollup of its scope, application and minute,
// and updates the day's totals (day.messages counts both); it returns how
// many it stored and their latest ExpiresAt (Unix microseconds).
func insert(ctx context.Context, tx *sql.Tx, stmts *statements, msgs []domain.Message, p *packer, indexWords bool) (added, maxExpires int64, err error) {
	insertMsg, err := stmts.in(ctx, tx, insertMessage)
	if err != nil {
		return 0, 0, err
	}
	defer insertMsg.Close()
	insertWords, err := stmts.in(ctx, tx, insertWordsQuery)
	if err != nil {
		return 0, 0, err
	}
	defer insertWords.Close()
	tallies, err := newTallyWriter(ctx, tx, stmts)
	if err != nil {
		return 0, 0, err
	}
	defer tallies.close()
	var (
		words         wordTokens
		subjectTokens []byte
		text          []byte
		rollups       = map[rollupKey]*stats.Rollup{}
	)
	count := func(m domain.Message) {
		added++
		maxExpires = max(maxExpires, m.ExpiresAt.UnixMicro())
		k := rollupKeyOf(m)
		if rollups[k] == nil {
			rollups[k] = &stats.Rollup{}
		}
		rollups[k].AddMessage(m)
	}
	for _, m := range msgs {
		if m.Tally {
			if stored, err := tallies.add(ctx, m); err != nil || !stored {
				if err != nil {
					return 0, 0, err
				}
				continue
			}
			count(m)
			continue
		}
		if tallied, err := tallies.holds(ctx, m.ID); err != nil || tallied {
			if err != nil {
				return 0, 0, fmt.Errorf("message %s: %w", m.ID, err)
			}
			continue // a retry of an exchange first dropped
		}
		subjectTokens = appendSubjectTokens(subjectTokens[:0], m.Subjects)
		values, err := rowValues(m, p, subjectTokens)
		if err != nil {
			return 0, 0, err
		}
		res, err := insertMsg.ExecContext(ctx, values...)
		if err != nil {
			return 0, 0, fmt.Errorf("message %s: %w", m.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			continue // already stored (or unknowable: then the commit fails too)
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return 0, 0, err
		}
		if indexWords || len(subjectTokens) > 0 {
			var tokens []byte
			if indexWords {
				tokens = words.of(m)
			}
			text = indexedText(text, tokens, string(subjectTokens))
			if _, err := insertWords.ExecContext(ctx, seq, text); err != nil {
				return 0, 0, fmt.Errorf("message %s: words: %w", m.ID, err)
			}
		}
		count(m)
	}
	if added == 0 {
		return 0, 0, nil
	}
	if err := addToRollups(ctx, tx, stmts, rollups); err != nil {
		return 0, 0, fmt.Errorf("rollups: %w", err)
	}
	totals, err := stmts.in(ctx, tx, dayTotalsQuery)
	if err != nil {
		return 0, 0, err
	}
	defer totals.Close()
	if _, err = totals.ExecContext(ctx, added, maxExpires); err != nil {
		return 0, 0, err
	}
	return added, maxExpires, nil
}

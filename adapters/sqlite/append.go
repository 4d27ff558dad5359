package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Append stores msgs, one transaction per day file they fall in, and returns
// nil only once every transaction has committed: in WAL mode with
// synchronous=FULL, a commit is on disk. A message whose id its day file
// already holds is left as stored (ON CONFLICT DO NOTHING), so a retry
// converges; the id's day is a function of CreatedAt, which a retry keeps.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := s.checkSpace(ctx, "append"); err != nil {
		return err
	}
	for _, group := range byDay(msgs) {
		if err := s.appendDay(ctx, group.day, group.msgs); err != nil {
			return err
		}
	}
	return nil
}

type dayGroup struct {
	day  time.Time
	msgs []domain.Message
}

// byDay splits msgs by the UTC day of CreatedAt, keeping their order; a batch
// is mostly of one day, which then takes no copy.
func byDay(msgs []domain.Message) []dayGroup {
	first := dayOf(msgs[0].CreatedAt)
	i := 1
	for i < len(msgs) && dayOf(msgs[i].CreatedAt).Equal(first) {
		i++
	}
	if i == len(msgs) {
		return []dayGroup{{first, msgs}}
	}
	var groups []dayGroup
	index := map[time.Time]int{}
	for _, m := range msgs {
		day := dayOf(m.CreatedAt)
		g, ok := index[day]
		if !ok {
			g = len(groups)
			index[day] = g
			groups = append(groups, dayGroup{day: day})
		}
		groups[g].msgs = append(groups[g].msgs, m)
	}
	return groups
}

// appendDay writes msgs, all of day, in one transaction of its writer.
func (s *Store) appendDay(ctx context.Context, day time.Time, msgs []domain.Message) error {
	d, err := s.acquire(ctx, day, true)
	if err != nil {
		return err
	}
	defer d.use.RUnlock()
	tx, err := d.Write.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return d.Error(ctx, "append: begin", err)
	}
	// Whatever the transaction's end: once it has ended, the hours it may
	// have written are read again.
	defer d.versions.wrote(msgs)
	defer tx.Rollback()
	if err := insert(ctx, tx, msgs, !s.skipWords); err != nil {
		return d.Error(ctx, "append", err)
	}
	if err := tx.Commit(); err != nil {
		return d.Error(ctx, "append: commit", err)
	}
	return nil
}

// insert writes each message not yet stored with its words (unless
// indexWords is off, as only the benchmark that prices the word index has
// it), adds it to the rollup of its scope, application and minute, and
// updates the day's totals.
func insert(ctx context.Context, tx *sql.Tx, msgs []domain.Message, indexWords bool) error {
	insertMsg, err := tx.PrepareContext(ctx, insertMessage)
	if err != nil {
		return err
	}
	defer insertMsg.Close()
	insertWords, err := tx.PrepareContext(ctx, `INSERT INTO words(rowid, w) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer insertWords.Close()
	var (
		added      int64
		maxExpires int64
		tokens     []byte
		hashes     []uint64
		rollups    = map[rollupKey]*stats.Rollup{}
	)
	for _, m := range msgs {
		values, err := rowValues(m)
		if err != nil {
			return err
		}
		res, err := insertMsg.ExecContext(ctx, values...)
		if err != nil {
			return fmt.Errorf("message %s: %w", m.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			continue // already stored (or unknowable: then the commit fails too)
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if indexWords {
			tokens, hashes = messageTokens(tokens[:0], hashes, m)
			if _, err := insertWords.ExecContext(ctx, seq, tokens); err != nil {
				return fmt.Errorf("message %s: words: %w", m.ID, err)
			}
		}
		added++
		maxExpires = max(maxExpires, m.ExpiresAt.UnixMicro())
		k := rollupKeyOf(m)
		if rollups[k] == nil {
			rollups[k] = &stats.Rollup{}
		}
		rollups[k].AddMessage(m)
	}
	if added == 0 {
		return nil
	}
	if err := addToRollups(ctx, tx, rollups); err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE day SET messages = messages + ?, max_expires = max(max_expires, ?)`, added, maxExpires)
	return err
}

package dayfile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// The rollups table holds one stats.Rollup per scope, application and
// minute of created (schema version 3), in rollupcodec's encoding, added to
// in the transaction that stores the messages: a retry adds nothing, only
// messages newly stored count. The statistics read them
// (adapters/sqlite/daystats).

// rollupKey names one rollup: minute is its start in Unix seconds.
type rollupKey struct {
	account, domain, name string
	minute                int64
}

func rollupKeyOf(m domain.Message) rollupKey {
	return rollupKey{account: m.Account, domain: m.Domain, name: m.Name, minute: m.CreatedAt.Unix() - m.CreatedAt.Unix()%60}
}

// addToRollups adds added (the rollups of the messages a transaction newly
// stored) to the stored ones. A batch spread over a day (a seed, a backfill)
// touches hundreds of minutes: both statements are prepared once.
// stmts may be nil (the statements prepared in tx).
func addToRollups(ctx context.Context, tx *sql.Tx, stmts *statements, added map[rollupKey]*stats.Rollup) error {
	read, err := stmts.in(ctx, tx, rollupReadQuery)
	if err != nil {
		return err
	}
	defer read.Close()
	write, err := stmts.in(ctx, tx, rollupWriteQuery)
	if err != nil {
		return err
	}
	defer write.Close()
	var stored stats.Rollup
	var decoder rollupcodec.Decoder
	var buf, data []byte
	for k, r := range added {
		err := read.QueryRowContext(ctx, k.account, k.domain, k.minute, k.name).Scan(&data)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			stored.Reset()
		case err != nil:
			return err
		default:
			if err := decoder.Rollup(data, &stored); err != nil {
				return fmt.Errorf("rollup of %s/%s/%s at %d: %w", k.account, k.domain, k.name, k.minute, err)
			}
		}
		stored.Merge(r)
		buf = rollupcodec.AppendRollup(buf[:0], &stored)
		if _, err := write.ExecContext(ctx, k.account, k.domain, k.minute, k.name, buf); err != nil {
			return err
		}
	}
	return nil
}

// fillRollups ends the migration to schema version 3 (schema/day-3.sql): the
// rollups of the messages already stored.
func fillRollups(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT account, domain, name, path, status, duration, created, visible, expires FROM messages`)
	if err != nil {
		return err
	}
	rollups := map[rollupKey]*stats.Rollup{}
	for rows.Next() {
		var (
			m                         domain.Message
			duration                  sql.NullInt64
			created, visible, expires int64
		)
		if err := rows.Scan(&m.Account, &m.Domain, &m.Name, &m.Path, &m.StatusCode, &duration, &created, &visible, &expires); err != nil {
			rows.Close()
			return err
		}
		m.CreatedAt, m.VisibleAt, m.ExpiresAt = time.UnixMicro(created).UTC(), time.UnixMicro(visible).UTC(), time.UnixMicro(expires).UTC()
		if duration.Valid {
			m.Duration, m.HasDuration = time.Duration(duration.Int64)*time.Microsecond, true
		}
		k := rollupKeyOf(m)
		if rollups[k] == nil {
			rollups[k] = &stats.Rollup{}
		}
		rollups[k].AddMessage(m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	return addToRollups(ctx, tx, nil, rollups)
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Each day file keeps, beside its messages, one domain.Rollup per scope,
// application and minute of created_at (table rollups, schema version 3),
// written in the transaction that stores the messages: Stats answers the
// portal's common view (a scope, or one application, over a range) from
// them, and streams only the minutes a rollup cannot stand for (see
// domain.RollupStatsBuilder).
const rollupsTable = `CREATE TABLE rollups (
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	minute INTEGER NOT NULL,
	name TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (account, domain, minute, name)
) WITHOUT ROWID`

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
func addToRollups(ctx context.Context, tx *sql.Tx, added map[rollupKey]*domain.Rollup) error {
	read, err := tx.PrepareContext(ctx, `SELECT data FROM rollups WHERE account = ? AND domain = ? AND minute = ? AND name = ?`)
	if err != nil {
		return err
	}
	defer read.Close()
	write, err := tx.PrepareContext(ctx, `INSERT INTO rollups(account, domain, minute, name, data) VALUES (?,?,?,?,?)
		ON CONFLICT DO UPDATE SET data = excluded.data`)
	if err != nil {
		return err
	}
	defer write.Close()
	var stored domain.Rollup
	var buf, data []byte
	for k, r := range added {
		err := read.QueryRowContext(ctx, k.account, k.domain, k.minute, k.name).Scan(&data)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			stored.Reset()
		case err != nil:
			return err
		default:
			if err := stored.UnmarshalBinary(data); err != nil {
				return fmt.Errorf("rollup of %s/%s/%s at %d: %w", k.account, k.domain, k.name, k.minute, err)
			}
		}
		stored.Merge(r)
		if buf, err = stored.AppendBinary(buf[:0]); err != nil {
			return err
		}
		if _, err := write.ExecContext(ctx, k.account, k.domain, k.minute, k.name, buf); err != nil {
			return err
		}
	}
	return nil
}

// rollupMinutes counts the minutes Stats answered from a rollup, for tests
// that the rollups were used at all.
var rollupMinutes atomic.Int64

// statsFromRollups answers q, which the rollups can answer, from day's
// rollups, streaming the minutes they cannot stand for into b.
func (s *Store) statsFromRollups(ctx context.Context, d *dayFile, q domain.StatsQuery, now time.Time, b *domain.RollupStatsBuilder) error {
	from, to := q.CountedRange()
	args := []any{q.Scope.Account, q.Scope.Domain, from.Unix() - 59, ceilMicro(to)/1e6 + 1}
	query := `SELECT minute, name, data FROM rollups WHERE account = ? AND domain = ? AND minute >= ? AND minute < ?`
	if q.Filter.Name != "" {
		query += ` AND name = ?`
		args = append(args, q.Filter.Name)
	}
	rows, err := d.read.QueryContext(ctx, query, args...)
	if err != nil {
		return d.fileError(ctx, "stats: rollups", err)
	}
	type minute struct {
		start time.Time
		name  string
	}
	var refused []minute
	var r domain.Rollup
	for rows.Next() {
		var (
			start int64
			name  string
			data  []byte
		)
		if err := rows.Scan(&start, &name, &data); err != nil {
			rows.Close()
			return d.fileError(ctx, "stats: rollups", err)
		}
		if err := r.UnmarshalBinary(data); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", d.path, name, start, err)
		}
		at := time.Unix(start, 0).UTC()
		if b.AddRollup(at, at.Add(time.Minute), name, &r) {
			rollupMinutes.Add(1)
			continue
		}
		refused = append(refused, minute{at, name})
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return d.fileError(ctx, "stats: rollups", err)
	}
	// The minutes refused, from their messages readable at now, within the range.
	for _, m := range refused {
		f := q.Filter
		f.Name = m.name
		if f.From.Before(m.start) {
			f.From = m.start
		}
		if end := m.start.Add(time.Minute); f.To.IsZero() || f.To.After(end) {
			f.To = end
		}
		if err := streamSamples(ctx, d, q.Scope, f, "", now, b.Add); err != nil {
			return err
		}
	}
	return nil
}

// addRollupsTable is the migration to schema version 3: the rollups of the
// messages already stored.
func addRollupsTable(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, rollupsTable); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT account, domain, name, path, status, duration, created, visible, expires FROM messages`)
	if err != nil {
		return err
	}
	rollups := map[rollupKey]*domain.Rollup{}
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
			rollups[k] = &domain.Rollup{}
		}
		rollups[k].AddMessage(m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	return addToRollups(ctx, tx, rollups)
}

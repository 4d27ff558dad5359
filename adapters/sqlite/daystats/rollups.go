package daystats

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Each day file keeps one stats.Rollup per scope, application and minute of
// created (its table rollups), written in the transaction that stores the
// messages. The engine counts a query they answer (a scope, or one
// application, over a range) from them (source.go: RollupHours, Rollups),
// and the word plan a day's rollups less the rest (word.go).

// eachRollup calls yield with the rollup of each minute in [from, to) (Unix
// seconds) of each application of scope in f (of name alone when it is not
// ""), by minute: the rollup parts of a statistics engine. The rollup is
// valid until yield returns; the first error yield returns ends the read.
func eachRollup(ctx context.Context, f *dayfile.File, scope domain.Scope, name string, from, to int64,
	yield func(minute int64, name string, r *stats.Rollup) error) error {
	args := []any{scope.Account, scope.Domain, from, to}
	query := `SELECT minute, name, data FROM rollups WHERE account = ? AND domain = ? AND minute >= ? AND minute < ?`
	if name != "" {
		query += ` AND name = ?`
		args = append(args, name)
	}
	rows, err := f.Read.QueryContext(ctx, query+` ORDER BY minute`, args...)
	if err != nil {
		return f.Error(ctx, "stats: rollups", err)
	}
	defer rows.Close()
	var (
		minute  int64
		app     string
		data    sql.RawBytes // decoded before the next row
		r       stats.Rollup
		decoder rollupcodec.Decoder
	)
	for rows.Next() {
		if err := rows.Scan(&minute, &app, &data); err != nil {
			return f.Error(ctx, "stats: rollups", err)
		}
		if err := decoder.Rollup(data, &r); err != nil {
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", f.Path, app, minute, err)
		}
		if err := yield(minute, app, &r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return f.Error(ctx, "stats: rollups", err)
	}
	return nil
}

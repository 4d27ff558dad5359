package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Stats streams the matching messages of the range into domain.StatsBuilder,
// day file by day file: five columns each from the messages_stats index,
// which holds every column the query reads, or, with q, the messages
// whose words hold q's words, read whole and checked with domain.Search.
func (s *Store) Stats(ctx context.Context, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	b := domain.NewStatsBuilder(q)
	f := q.Filter
	// Only messages inside both the buckets' range and the filter's count.
	if f.From.IsZero() || f.From.Before(q.From) {
		f.From = q.From
	}
	if f.To.IsZero() || f.To.After(q.To) {
		f.To = q.To
	}
	if !f.From.Before(f.To) {
		return b.Stats(), nil
	}
	words := ""
	if f.Text != "" {
		var ok bool
		if words, ok = wordsQuery(f.Text); !ok {
			return b.Stats(), nil
		}
	}
	match := f.Matcher()
	for _, day := range s.daysNewestFirst(dayRange(f, nil)) {
		if err := s.statsOf(ctx, day, q.Scope, f, words, match, now, b); err != nil {
			return domain.Stats{}, err
		}
	}
	return b.Stats(), nil
}

func (s *Store) statsOf(ctx context.Context, day time.Time, scope domain.Scope, f domain.Filter, words string,
	match func(domain.Message) bool, now time.Time, b *domain.StatsBuilder) error {
	d, err := s.acquire(ctx, day, false)
	if err != nil || d == nil {
		return err
	}
	defer d.use.RUnlock()
	w := readableWhere(scope, f, now)
	columns, from := "created, status, duration, name, path", "messages INDEXED BY messages_stats"
	if words != "" {
		columns = messageColumns
		few, none, err := byWords(ctx, d, words, w)
		switch {
		case err != nil:
			return d.fileError(ctx, "stats: search", err)
		case none:
			return nil
		case few:
			from = "messages NOT INDEXED"
		default: // many: the range, each message's seq looked up in them
			from = "messages"
			w.add("seq IN (SELECT rowid FROM words WHERE words MATCH ?)", words)
		}
	}
	rows, err := d.read.QueryContext(ctx, "SELECT "+columns+" FROM "+from+" WHERE "+w.String(), w.args...)
	if err != nil {
		return d.fileError(ctx, "stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		if words != "" {
			m, err := scanMessage(rows)
			if err != nil {
				return d.fileError(ctx, "stats", err)
			}
			if match(m) {
				b.Add(domain.SampleOf(m))
			}
			continue
		}
		var (
			sample   domain.StatsSample
			created  int64
			duration sql.NullInt64
		)
		if err := rows.Scan(&created, &sample.StatusCode, &duration, &sample.Name, &sample.Path); err != nil {
			return d.fileError(ctx, "stats", err)
		}
		sample.CreatedAt = time.UnixMicro(created).UTC()
		if duration.Valid {
			sample.Duration, sample.HasDuration = time.Duration(duration.Int64)*time.Microsecond, true
		}
		b.Add(sample)
	}
	if err := rows.Err(); err != nil {
		return d.fileError(ctx, "stats", err)
	}
	return nil
}

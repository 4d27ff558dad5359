package ports

import (
	"context"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A store answers MessageReader.Stats through the statistics engine
// (adapters/statsengine), which chooses how to count a query from what the
// store offers: every store streams the narrow rows of its messages
// (SampleStreamer); a store that keeps rollups gives them (RollupSource); a
// store that can count by itself does (StatsAggregator).

// SampleStreamer streams what the statistics read of a store's messages.
type SampleStreamer interface {
	// StreamSamples calls yield with stats.SampleOf of each message of scope
	// that is readable at now (VisibleAt <= now < ExpiresAt) and passes f, as
	// domain.Filter.Matches tells (f.From and f.To bound CreatedAt; f.Text is
	// the q of List), and returns the first error yield returns.
	//
	// It MUST yield every such message once and no other, in any order. It
	// MAY miss messages appended within ReadLag, as List may. It MUST return
	// an error wrapping ctx's once ctx is done. The sample belongs to the
	// caller.
	StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error
}

// RollupSource is the optional capability of a store that keeps a
// stats.Rollup per scope, application and minute of CreatedAt, standing for
// every message it stores in that minute (readable or not: the rollup's
// AllVisibleAt and FirstExpiresAt tell when it stands for them at a given
// now).
type RollupSource interface {
	// RollupsFrom is the earliest CreatedAt from which the store's rollups
	// stand for every message it stores: the zero time when they always
	// did. The engine reads the messages created before it.
	RollupsFrom(ctx context.Context) (time.Time, error)

	// RollupHours calls yield once for each hour (aligned on UTC hours) that
	// meets [from, to) and in which scope has stored messages (of the
	// application name alone when name is not ""), with a version of what the
	// hour holds, about how many messages and minute rollups it holds, and
	// returns the first error yield returns.
	//
	// The version MUST change whenever a message created in that hour (of
	// that application, when name is set) is stored, by the time the Append
	// storing it returns, and MUST NOT take again a value it had while the
	// hour held other messages; the engine keeps what it counted of a whole
	// hour under its version. messages and rollups are estimates for the
	// engine's plan (messages -1 when the store cannot tell); they SHOULD
	// NOT be far below the truth.
	RollupHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
		yield func(hour time.Time, version uint64, messages, rollups int64) error) error

	// Rollups calls yield once for each application (name alone when not "")
	// and minute meeting [from, to) in which scope has stored messages, with
	// the rollup of every message stored in that minute of that application,
	// or with nil when the store keeps none that stands for them all (the
	// engine then reads the minute's messages readable at now). A minute it
	// does not yield holds no message. It returns the first error yield
	// returns.
	//
	// A rollup MUST count each message it stands for once, however often or
	// in whatever batches it was appended, and MUST count every message whose
	// Append returned before the call began; it MAY miss messages appended
	// within ReadLag. A store MAY yield nil for a minute whose rollup could
	// not stand for it at now anyway (a message written there is not visible
	// yet) rather than count it. The rollup is the store's, valid until yield
	// returns.
	Rollups(ctx context.Context, scope domain.Scope, name string, from, to, now time.Time,
		yield func(minute time.Time, name string, r *stats.Rollup) error) error
}

// StatsAggregator is the optional capability of a store that computes
// statistics itself, in one request to its backend (Elasticsearch's
// aggregations, MongoDB's aggregation pipeline).
type StatsAggregator interface {
	// AggregateStats returns q's statistics at now as MessageReader.Stats
	// MUST: every readable message that passes q.Filter counted once, in the
	// bucket of its CreatedAt, percentiles within the contract's bounds.
	AggregateStats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error)
}

// RollupKeeper is the optional capability of a store that keeps its rollups
// past its messages' retention (domain.Policy.RollupRetention): its
// RollupSource still yields, for RollupHours and Rollups, the rollups of
// the minutes whose messages it purged, so that the statistics of a query
// with a stats.Query.RollupsOnlyBefore count them.
type RollupKeeper interface {
	// PurgeRollups deletes the rollups it keeps of the minutes before
	// before, and returns how many (-1 when it cannot tell). It MUST NOT
	// delete a rollup of a minute at or after before; a store that deletes
	// in coarser units (Elasticsearch: a UTC day's index) MAY keep the
	// others until their whole unit is before it. The purge job passes a
	// time no later than the messages' retention's edge
	// (domain.Policy.OldestRollup): a store MAY keep its readable messages'
	// rollups with those it keeps past them, and delete them alike.
	PurgeRollups(ctx context.Context, before time.Time) (int64, error)
}

package ports

import (
	"context"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
)

// SubjectQuery selects messages of an account by their subject index: the
// keyed hashes domain.Message.Subjects held when they were appended.
type SubjectQuery struct {
	Account string
	// Domain narrows to one domain of the account; "" is both.
	Domain string
	// Hashes: a message indexed under any of them is selected.
	Hashes []string
	// CreatedBefore, when set, leaves out messages created after it.
	CreatedBefore time.Time
	// After, when set, starts strictly after this position in List order
	// (newest first by CreatedAt, ties by ID descending).
	After *domain.Cursor
	// Limit bounds the answer (at least 1).
	Limit int
}

// SubjectRef is where a message of a subject is.
type SubjectRef struct {
	ID        string
	Domain    string
	CreatedAt time.Time
	// Partition names the part of the store that holds it (SQLite: its day
	// file; Elasticsearch: its index; MongoDB: its collection and day), as
	// an erasure's receipt counts it; "" when the store has no parts.
	Partition string
}

// Cursor is the ref's position in List order.
func (r SubjectRef) Cursor() domain.Cursor { return domain.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} }

// Eraser is an optional capability of a MessageStore: it keeps a subject
// index beside the messages (each message's Subjects, written by Append in
// the same durable write) and erases messages by it. app discovers it by
// type assertion.
type Eraser interface {
	// SubjectMessages returns the messages q selects, hidden ones too,
	// newest first by CreatedAt then ID, at most q.Limit. It MUST find every
	// message whose Append returned nil with one of q.Hashes in Subjects
	// (after ReadLag), and MUST NOT return one of another account. Subjects
	// are never returned by List, Get or Lookup.
	SubjectMessages(ctx context.Context, q SubjectQuery) ([]SubjectRef, error)
	// MessageSubjects finds account's message id, in either domain, readable
	// or hidden, and returns its ref and the hashes its subject index holds
	// (none when it was stored without subjects); an id of no message of
	// the account wraps ErrNotFound. An erasure by message id erases it and
	// every message of its subjects.
	MessageSubjects(ctx context.Context, account, id string) (SubjectRef, []string, error)
	// Hide makes account's messages refs unreadable by every read (List,
	// Get, Stats' counts of messages, exports) on every replica sharing the
	// store, at once when it returns nil (after ReadLag), and returns how many
	// it hid; SubjectMessages still finds them. It MAY hide a message by
	// setting its ExpiresAt to erasure.HiddenExpiry. Hiding twice is not an
	// error. Rollups of statistics MAY keep counting them.
	Hide(ctx context.Context, account string, refs []SubjectRef) (int64, error)
	// Delete physically deletes account's messages refs, with their subject
	// and word index entries, and returns how many it deleted; ids no longer
	// stored are not an error. After Delete and Expunge no byte of a deleted
	// message's text SHOULD remain where the store keeps its data (the
	// SQLite store: none in the data directory).
	Delete(ctx context.Context, account string, refs []SubjectRef) (int64, error)
	// Expunge makes what Delete deleted since the last Expunge unrecoverable
	// where the store can (SQLite: the WAL checkpointed and truncated;
	// Elasticsearch: the deleted documents merged away). It MAY be slow; it
	// is called once per run of the erasure job.
	Expunge(ctx context.Context) error
}

// TallyEraser is an optional capability of an Eraser whose store keeps
// tallies (domain.Message.Tally: the exchanges ingest rules dropped, for the
// statistics) with their subject hashes: a tally's path or name may hold a
// subject's value. app discovers it by type assertion.
type TallyEraser interface {
	// EraseTallies physically deletes the tallies q selects (its Account,
	// Domain, Hashes and CreatedBefore; After and Limit are not used) and
	// returns how many it deleted; none left is not an error. Expunge
	// makes them unrecoverable as it does deleted messages. Rollups of
	// statistics MAY keep counting them.
	EraseTallies(ctx context.Context, q SubjectQuery) (int64, error)
}

// SubjectEntry is a stored message and the subject hashes to index it
// under.
type SubjectEntry struct {
	Ref    SubjectRef
	Hashes []string
}

// SubjectIndexer is an optional capability of an Eraser: indexing stored
// messages under more subjects, for the backfill of subject keys configured
// after the messages were stored (app.Rescrubs, rules.KindSubjects).
type SubjectIndexer interface {
	// IndexSubjects adds each entry's Hashes to the subject index of
	// account's message entry.Ref.ID (created at Ref.CreatedAt), keeping
	// the hashes it is indexed under; a message no longer stored, or of
	// another account, is skipped. It returns how many messages it found.
	// When it returns nil the entries are durable and SubjectMessages finds
	// them (after ReadLag). Indexing twice is not an error.
	IndexSubjects(ctx context.Context, account string, entries []SubjectEntry) (int64, error)
}

// ErasureJournal keeps the erasures (domain/erasure): what was asked, by
// whom and when, and how far each has gone, never the subjects' values. It
// lives beside the rule sets; several replicas share it. A journal that
// replicas share SHOULD also be Leases: the erasure job then works on one
// replica at a time, so no replica writes an erasure's progress over
// another's (a receipt's counts, a state gone back). Every method takes ctx
// first and reports backend outages wrapping ErrUnavailable; returned values
// belong to the caller.
type ErasureJournal interface {
	// SaveErasure writes e, replacing the erasure of its Account and ID if
	// there is one. It MUST be durable, and seen by every replica, when it
	// returns nil.
	SaveErasure(ctx context.Context, e erasure.Erasure) error
	// Erasure returns account's erasure id, or an error wrapping ErrNotFound
	// (also for an id of another account).
	Erasure(ctx context.Context, account, id string) (erasure.Erasure, error)
	// Erasures returns account's erasures whose ID sorts before before ("":
	// no bound), newest first (IDs are time-ordered: ID descending), at most
	// limit.
	Erasures(ctx context.Context, account, before string, limit int) ([]erasure.Erasure, error)
	// AllErasures returns every account's erasures, in no order: the
	// erasure job's work and the subjects to keep forgetting. A journal
	// holds one per request, so few.
	AllErasures(ctx context.Context) ([]erasure.Erasure, error)
}

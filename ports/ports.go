// Package ports declares what reqlog's use cases need from the outside world: a
// place to write messages, a place to read them, API-key lookup and a clock. Each
// interface documents its rules with MUST / MUST NOT; the conformance package checks
// them against every store adapter. Ports import only the domain and the standard
// library.
package ports

import (
	"context"
	"errors"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Sentinel errors. Adapters wrap backend errors into these (fmt.Errorf("...: %w"));
// callers test them with errors.Is, never by message text.
var (
	// ErrNotFound: no such message in the caller's scope, or not readable yet.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the store cannot be reached or refused the operation for now;
	// the same call may succeed later (HTTP 503 with Retry-After).
	ErrUnavailable = errors.New("store unavailable")
	// ErrUnauthenticated: the presented credential is missing or unknown.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the credential is valid but may not do this, e.g. a read-only
	// portal session submitting (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrOverloaded: the service is shedding load (HTTP 429 with Retry-After).
	ErrOverloaded = errors.New("overloaded")
	// ErrConflict: an Idempotency-Key already stored a different request, so this
	// one cannot be its retry (HTTP 400 naming the Idempotency-Key header).
	ErrConflict = errors.New("conflict")
)

// MessageWriter stores messages.
type MessageWriter interface {
	// Append stores msgs, which the domain has already validated and normalised.
	//
	// Append MUST be durable when it returns nil: every message is then readable
	// (from its VisibleAt, until ExpiresAt) even if the process or the store restarts.
	// Append MUST be idempotent per message id: appending an id that is already
	// stored succeeds and leaves the stored message unchanged, so a retry after a
	// partial failure converges. On error, any subset of msgs may have been stored.
	// Append MUST NOT keep references to msgs or their headers after it returns.
	// Backend outages MUST be reported as errors wrapping ErrUnavailable.
	//
	// A message with Tally set (what an ingest rule dropped) MUST be written
	// as the others, in the same write, idempotent per id with them (whichever
	// of a tally and a message of one id came first stays), and MUST then be
	// counted by Stats as any message (and in Dropped); List, Get and Lookup
	// MUST NOT return it. A store MAY keep it without headers and bodies, which
	// it has none of. SampleRate MUST round-trip as every field does.
	Append(ctx context.Context, msgs []domain.Message) error
}

// MessageReader reads messages, always inside one scope and at a given time.
type MessageReader interface {
	// List returns one page of q.Scope's messages that are readable at now
	// (VisibleAt <= now < ExpiresAt) and pass q.Filter, newest first by CreatedAt,
	// ties broken by ID descending, starting strictly after q.After when set.
	//
	// q.Filter.Text is the q search: a message MUST match when the text occurs,
	// ignoring case, in its path, a body (the first domain.SearchedBodyBytes at
	// least) or a header value, starting and ending on word boundaries; it MUST
	// NOT match when the text occurs in none of them and its words do not occur
	// there as consecutive words. domain.Search meets both.
	//
	// List MUST NOT return a message before its VisibleAt nor at or after its
	// ExpiresAt, nor one from another scope. It MUST return at most q.Limit messages,
	// MUST end the page early once it holds domain.PageBytes (domain.FillPage does
	// both), and MUST set HasMore exactly when at least one more message follows.
	// It SHOULD stop reading there too, so a page of large messages costs no more
	// memory than the page. An empty page is not an error. Returned messages belong
	// to the caller.
	List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error)

	// Get returns the message of scope whose ID or Reference is idOrReference and
	// that is readable at now; otherwise an error wrapping ErrNotFound.
	Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error)

	// Stats returns the traffic statistics of q.Scope's messages that are
	// readable at now and pass q.Filter (q.Filter.From and To included), in
	// q's buckets: stats.New gives their shape, and stats.Builder
	// computes them exactly from the messages (the reference).
	//
	// Stats MUST count every such message once, in the bucket of its
	// CreatedAt, and no other. Percentiles MAY be approximate within the
	// contract's bounds. TopPaths and TopNames MUST be ranked as
	// stats.CompareKeyCounts orders them.
	Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error)
}

// MessageLookup finds stored messages by id, for telling a retry from a new
// request under the same Idempotency-Key.
type MessageLookup interface {
	// Lookup returns the messages of scope stored under any of ids, whether or
	// not they are readable yet; ids not stored are absent. It MAY miss messages
	// appended within ReadLag. Returned messages belong to the caller.
	Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error)
}

// TallyLookup is an optional capability of a MessageLookup whose store keeps
// tallies (domain.Message.Tally), which Lookup never returns: a retry under
// an Idempotency-Key of a request an ingest rule dropped is answered as the
// first was, "stored": false, whatever the rules say now, since Append keeps
// the tally. app discovers it by type assertion.
type TallyLookup interface {
	// LookupTallies returns the tallies of scope stored under any of ids, in
	// any order (one id MAY come twice); ids not stored, or stored as
	// messages, are absent. It MAY miss tallies appended within ReadLag.
	LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]StoredTally, error)
}

// StoredTally is a tally LookupTallies found: its id, and the digest of its
// submission (domain.RulesRecord.Submitted) where the store keeps it, ""
// where it does not (SQLite keeps a tally's metadata alone).
type StoredTally struct{ ID, Submitted string }

// ExpiredPurger deletes what retention has expired.
type ExpiredPurger interface {
	// PurgeExpired deletes messages whose ExpiresAt is at or before now and returns
	// how many it deleted (-1 when the backend cannot tell). A store that deletes in
	// coarser units (Elasticsearch: whole daily indices) MUST NOT delete anything
	// not yet expired and MAY keep expired messages until their whole unit expires;
	// List and Get never return them either way. Messages an erasure hid
	// (erasure.HiddenExpiry) SHOULD be left to its job, which deletes and
	// counts them (a unit that expires takes them with it; MongoDB's TTL
	// index, where there is one, takes them too).
	PurgeExpired(ctx context.Context, now time.Time) (int64, error)
}

// RetentionOf is the current retention of an account's retention rule (a
// domain.RetentionClass): how long its messages are kept after their
// CreatedAt, and their bodies (at most keep). ok is false when the account
// has no such rule any more: its messages keep the expiry stamped on them.
type RetentionOf func(ctx context.Context, class domain.RetentionClass) (keep, bodies time.Duration, ok bool, err error)

// RetentionPurger is an ExpiredPurger that keeps each retention class
// apart (domain.Message.RetentionRule) and applies the classes' current
// retention to what they hold: a class shortened since its messages were
// stored is purged as its rule now says, and the bodies of a class whose
// bodies retention has passed are taken out of the store.
type RetentionPurger interface {
	// PurgeRetention does what PurgeExpired does, and, per class, deletes
	// the messages created longer than current's keep before now and takes
	// out the bodies of those created longer than its bodies before now. A
	// store MAY keep them until a whole unit (a day of the class) is past
	// it. A class current cannot tell of (an error) is left for the next
	// purge; the others go on.
	PurgeRetention(ctx context.Context, now time.Time, current RetentionOf) (int64, error)
}

// MessageStore is what a storage adapter provides.
type MessageStore interface {
	MessageWriter
	MessageReader
	MessageLookup
	ExpiredPurger
	// ReadLag is how long after a successful Append reads may still miss the
	// message (Elasticsearch: its refresh interval). The service refuses to start
	// with a visibility delay shorter than this.
	ReadLag() time.Duration
}

// HealthChecker is an optional capability: stores that can tell whether their
// backend answers implement it, and /readyz reports it.
type HealthChecker interface {
	Ping(ctx context.Context) error
}

// StatsWarmer is an optional capability: a store that can count the
// statistics the first charts after a start ask for, before they ask,
// implements it, and the service runs it in the background at start. It MUST
// return soon after ctx ends.
type StatsWarmer interface {
	WarmStats(ctx context.Context, now time.Time) error
}

// KeyStore resolves API keys.
type KeyStore interface {
	// Authenticate returns the principal owning key, or an error wrapping
	// ErrUnauthenticated. It MUST compare keys in constant time and MUST NOT log them.
	Authenticate(ctx context.Context, key string) (domain.Principal, error)
}

// Clock tells the time; tests substitute a fake one.
type Clock interface {
	Now() time.Time
}

// ExchangeSubmitter sends captured HTTP exchanges to reqlog: to a remote service over
// HTTP, or to the ingest use case in the same process.
type ExchangeSubmitter interface {
	// SubmitExchanges validates and stores exchanges as one batch and returns their
	// identities in input order. An empty batch stores nothing and returns no error.
	//
	// It MUST be all-or-nothing: a nil error means every exchange is durably stored;
	// a batch with an invalid item stores none, and its error MUST let errors.As find
	// a *domain.ValidationError naming the bad items ("[3].method"). A batch over the
	// receiver's size or count limit MUST fail with an error wrapping
	// domain.ErrTooLarge, so the caller can split it. Errors after which the same
	// call may succeed later MUST wrap ErrUnavailable or ErrOverloaded; an
	// implementation that retries by itself MUST NOT store an exchange twice.
	// It MUST NOT keep references to exchanges after it returns.
	SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error)
}

// BodyCutter is an ExchangeSubmitter whose receiver can cut bodies after the
// privacy rules: a capture then sends more of each body than it keeps, so
// that a secret straddling its cap is read whole by the rules, and never kept
// in part.
type BodyCutter interface {
	// CuttingBodiesAt is a submitter of the same receiver that has each body
	// held to limit bytes (domain.CutBody) once the rules have run on it.
	CuttingBodiesAt(limit int) ExchangeSubmitter
}

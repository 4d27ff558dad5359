// Package erasure is an end user's erasure (GDPR Art. 17) as reqlog keeps
// it: a request naming the subject by values (an e-mail address, a user id,
// an IP address), the keyed hashes of those values (rules.SubjectHash, what
// the stores' subject index holds), and the erasure's record in the journal:
// who asked, when, its state and counts, never the values.
//
// An erasure goes pending → hidden (no read returns a message of the subject
// any more, on any replica) → deleted (the messages are physically gone). It
// may also ask that the subject's future exchanges be dropped or stored with
// the subject's values redacted (Future).
package erasure

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// State is where an erasure is.
type State string

// The states of an erasure, in order.
const (
	StatePending State = "pending" // journaled, not hidden yet
	StateHidden  State = "hidden"  // no read returns a message of it
	StateDeleted State = "deleted" // physically deleted
)

// Future is what becomes of the subject's exchanges stored after the erasure.
type Future string

// The futures of an erasure; "" stores them as any other.
const (
	FutureKeep   Future = ""
	FutureDrop   Future = "drop"   // not stored (counted in the statistics)
	FutureRedact Future = "redact" // stored, the subject's values replaced by Redacted
)

// Bounds of a request.
const (
	MaxSubjects     = 100
	MaxSubjectBytes = 1024
	MaxReasonBytes  = 500
)

// Request is what an erasure is asked with; the values are never kept.
type Request struct {
	Subjects []string `json:"subjects"`
	// MessageID, when set, names the subject by a message of theirs: it is
	// erased with every message of its subjects.
	MessageID string `json:"message_id,omitempty"`
	Future    Future `json:"future,omitempty"`
	Reason    string `json:"reason,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
}

// Validate reports every bad field as a *domain.ValidationError naming it.
func (r Request) Validate() error {
	var fe domain.FieldErrors
	switch {
	case len(r.Subjects) == 0 && r.MessageID == "":
		fe.Add("subjects", "names the subject: 1 to %d values (an e-mail address, a user id, an IP address), or message_id one of their messages", MaxSubjects)
	case len(r.Subjects) > MaxSubjects:
		fe.Add("subjects", "must be at most %d values", MaxSubjects)
	}
	for i, v := range r.Subjects {
		if rules.NormalizeSubject(v) == "" || len(v) > MaxSubjectBytes || !utf8.ValidString(v) {
			fe.Add(fmt.Sprintf("subjects[%d]", i), "must be 1 to %d bytes of UTF-8 text, not only spaces", MaxSubjectBytes)
		}
	}
	if _, ok := domain.CanonicalID(r.MessageID); r.MessageID != "" && !ok {
		fe.Add("message_id", "must be a message's id (a UUID, as GET /v1/messages shows it)")
	}
	switch r.Future {
	case FutureKeep, FutureDrop, FutureRedact:
	default:
		fe.Add("future", "must be drop or redact, or absent")
	}
	if len(r.Reason) > MaxReasonBytes || !utf8.ValidString(r.Reason) {
		fe.Add("reason", "must be at most %d bytes of UTF-8 text", MaxReasonBytes)
	}
	return fe.Err("the erasure request is invalid")
}

// Hashes are the keyed hashes of the request's values under each of keys
// (the hash key, and the one before a rotation), each once, sorted.
func (r Request) Hashes(keys ...[]byte) []string {
	out := make([]string, 0, len(r.Subjects)*len(keys))
	for _, key := range keys {
		for _, v := range r.Subjects {
			out = append(out, rules.SubjectHash(key, v))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Erasure is one erasure as the journal keeps it (its JSON is the stores'
// record): who asked, when, its state and counts, the subjects' hashes, and
// never their values.
type Erasure struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	// KeyID is the API key that asked.
	KeyID  string `json:"key_id"`
	Reason string `json:"reason,omitempty"`
	State  State  `json:"state"`
	Future Future `json:"future,omitempty"`
	// Hashes are the subject values' keyed hashes.
	Hashes []string `json:"hashes"`
	// Subjects is how many values were given.
	Subjects int `json:"subjects"`
	// Message is the message the erasure was asked by (Request.MessageID),
	// erased whether or not it has subjects.
	Message *MessageRef `json:"message,omitempty"`
	Counts
	// Partitions are the counts per partition of the store (a SQLite day
	// file, an Elasticsearch index, a MongoDB collection's day), by name.
	Partitions []PartitionCounts `json:"partitions,omitempty"`
	At         time.Time         `json:"at"`
	HiddenAt   time.Time         `json:"hidden_at,omitzero"`
	DeletedAt  time.Time         `json:"deleted_at,omitzero"`
}

// Counts are an erasure's messages, so far.
type Counts struct {
	// Hidden and Deleted count the messages hidden, then physically deleted.
	Hidden  int64 `json:"hidden"`
	Deleted int64 `json:"deleted"`
	// Reapplied counts messages erased again after a restart found them
	// (data restored from a copy older than the erasure).
	Reapplied int64 `json:"reapplied,omitempty"`
}

// PartitionCounts are the counts of one partition of the store.
type PartitionCounts struct {
	Partition string `json:"partition"`
	Counts
}

// MessageRef is where a message is.
type MessageRef struct {
	ID        string    `json:"id"`
	Domain    string    `json:"domain"`
	CreatedAt time.Time `json:"created_at"`
	Partition string    `json:"partition,omitempty"`
}

// Count adds n to what count picks of the erasure's counts and of
// partition's, which it adds in name order if it is new.
func (e *Erasure) Count(partition string, n int64, count func(*Counts) *int64) {
	if n == 0 {
		return
	}
	*count(&e.Counts) += n
	i, found := slices.BinarySearchFunc(e.Partitions, partition, func(p PartitionCounts, name string) int {
		return strings.Compare(p.Partition, name)
	})
	if !found {
		e.Partitions = slices.Insert(e.Partitions, i, PartitionCounts{Partition: partition})
	}
	*count(&e.Partitions[i].Counts) += n
}

// The counts Count adds to.
func HiddenCount(c *Counts) *int64    { return &c.Hidden }
func DeletedCount(c *Counts) *int64   { return &c.Deleted }
func ReappliedCount(c *Counts) *int64 { return &c.Reapplied }

// Covers reports whether the erasure erases a message of its subject created
// at created: one created up to the erasure, or any with a Future (those
// would not have been stored as they are).
func (e Erasure) Covers(created time.Time) bool {
	return e.Future != FutureKeep || !created.After(e.At)
}

// CreatedBefore is the latest creation time of the messages it erases; zero
// for no bound (Covers).
func (e Erasure) CreatedBefore() time.Time {
	if e.Future != FutureKeep {
		return time.Time{}
	}
	return e.At
}

// HiddenExpiry is the ExpiresAt a store may give a message to hide it: every
// read already leaves out a message expired at its time, on every replica.
var HiddenExpiry = time.Unix(0, 0).UTC()

// NewID is a new erasure id: a UUID v7, so that ids sort in the order
// erasures were asked.
func NewID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("new erasure id: %w", err)
	}
	return id.String(), nil
}

// SortNewestFirst orders erasures newest first (ID descending), as the
// audit list shows them.
func SortNewestFirst(es []Erasure) {
	slices.SortFunc(es, func(a, b Erasure) int { return strings.Compare(b.ID, a.ID) })
}

package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Environments a key, and so every message it submits, belongs to.
const (
	DomainLive = "live"
	DomainTest = "test"
)

// ValidDomain reports whether d is one of the environments of the contract.
func ValidDomain(d string) bool { return d == DomainLive || d == DomainTest }

// Scope is the tenant boundary: one account in one domain. A key reads and writes
// only inside its scope.
type Scope struct {
	Account string
	Domain  string
}

// Principal is who a request acts as.
type Principal struct {
	Scope
	// Name, when set, restricts reads to one application (portal sessions).
	Name string
	// ReadOnly principals may not submit.
	ReadOnly bool
	// KeyID names the API key a request came with, for records of who did
	// what (a rule set's history); "" for a portal session. It is not secret.
	KeyID string
}

// Header maps canonical header names to their values, in submission order.
type Header map[string][]string

// Clone returns a deep copy, so stores never share slices with callers.
// The values share one new slice: a stored copy holds one object for them, not
// one per name.
func (h Header) Clone() Header {
	total := 0
	for _, v := range h {
		total += len(v)
	}
	out, all := make(Header, len(h)), make([]string, 0, total)
	for k, v := range h {
		if len(v) == 0 {
			out[k] = nil
			continue
		}
		all = append(all, v...)
		out[k] = all[len(all)-len(v) : len(all) : len(all)]
	}
	return out
}

// Content is one side of an exchange: the captured request or response.
type Content struct {
	Header      Header
	Body        string
	ContentType string
	// Size is the length in bytes of the body as submitted: after JSON
	// unescaping, before redaction.
	Size int
	// JSONBody is Body as validation left it when it found it JSON (after
	// byte order marks and whitespace) nesting at most MaxNesting deep, ""
	// when it did not look or found otherwise: the rules, which read a JSON
	// body's values, need not check it again. It holds for Body only while
	// Body is that text (BodyIsJSON), so that what rewrites Body need not
	// clear it. No store keeps it.
	JSONBody string
}

// BodyIsJSON reports whether validation found c's body, as it is now, JSON
// nesting at most MaxNesting deep; false when not, or not known.
func (c *Content) BodyIsJSON() bool { return c.JSONBody != "" && c.JSONBody == c.Body }

// Message is one stored HTTP exchange.
type Message struct {
	ID         string // UUID, lower-case canonical form
	Reference  string // "msg_" + 12 Alphanumerics
	Account    string
	Domain     string
	Name       string // the application the exchange belongs to
	IPAddress  string // canonical form, or ""
	Method     string // upper-case
	Path       string
	Route      string // the template the server matched, or ""
	StatusCode int
	Request    Content
	Response   Content
	// Duration is how long the server took to answer, in whole microseconds;
	// HasDuration is false when the submission did not say.
	Duration    time.Duration
	HasDuration bool
	CreatedAt   time.Time // the submission's time (UTC, microseconds)
	UpdatedAt   time.Time // when the service stored it
	VisibleAt   time.Time // UpdatedAt + visibility delay
	ExpiresAt   time.Time // CreatedAt + retention
	// BodiesExpireAt is when a retention rule's bodies retention ends: from
	// then on no read returns the bodies (WithoutExpiredBodies) and the purge
	// takes them out of the store. Zero: they go with the message.
	BodiesExpireAt time.Time
	// RetentionRule is the id of the account's retention rule that set
	// ExpiresAt, "" for the policy's: the message's retention class
	// (RetentionClass). A store partitions by it and its purge applies the
	// class's current retention (ports.RetentionPurger); no read needs to
	// return it.
	RetentionRule string
	// Rules records the rule set version that wrote the message and which
	// rules changed it (rule ids and field paths, never values).
	Rules RulesRecord
	// Subjects are the keyed hashes of the exchange's subject values
	// (rules.Outcome.Subjects): Append writes them to the store's subject
	// index with the message (ports.Eraser); no read returns them.
	Subjects []string
	// SampleRate is N when an ingest rule kept this message as the one of N it
	// samples (the other N-1 are tallies), 0 otherwise.
	SampleRate int
	// Tally marks an exchange an ingest rule dropped: a store writes it with
	// the messages of its batch, in the same write, as what the statistics
	// count (scrubbed, without headers and bodies: AsTally), and no read
	// returns it (List, Get, Lookup). It keeps its Subjects: an erasure
	// deletes a subject's tallies with its messages.
	Tally bool
}

// AsTally is m as a tally: its metadata, without headers, bodies and their
// types and sizes, which no read returns and the statistics never read.
func (m Message) AsTally() Message {
	m.Request, m.Response = Content{}, Content{}
	m.SampleRate, m.Tally = 0, true
	return m
}

// RetentionClass names the retention class of the message: its account's
// retention rule, "" for the policy's retention.
type RetentionClass struct{ Account, Rule string }

// Tag names the class where a name may not hold its account and rule id
// (files, indices): "" for the policy's class, else "r" and 16 hex digits
// of the SHA-256 of its account and rule id.
func (c RetentionClass) Tag() string {
	if c == (RetentionClass{}) {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Account + "\x00" + c.Rule))
	return "r" + hex.EncodeToString(sum[:8])
}

// RetentionClass is m's class.
func (m Message) RetentionClass() RetentionClass {
	if m.RetentionRule == "" {
		return RetentionClass{}
	}
	return RetentionClass{Account: m.Account, Rule: m.RetentionRule}
}

// WithoutExpiredBodies is m without its bodies once BodiesExpireAt has
// passed at now: what every read returns, whether or not the purge has
// taken them out of the store yet.
func (m Message) WithoutExpiredBodies(now time.Time) Message {
	if !m.BodiesExpireAt.IsZero() && !now.Before(m.BodiesExpireAt) {
		m.Request.Body, m.Response.Body = "", ""
	}
	return m
}

// Scope returns the tenant the message belongs to.
func (m Message) Scope() Scope { return Scope{Account: m.Account, Domain: m.Domain} }

// Readable reports whether m may be returned to a reader at now:
// visible from VisibleAt (inclusive) until ExpiresAt (exclusive).
func (m Message) Readable(now time.Time) bool {
	return !now.Before(m.VisibleAt) && now.Before(m.ExpiresAt)
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	m.Request.Header = m.Request.Header.Clone()
	m.Response.Header = m.Response.Header.Clone()
	m.Rules = m.Rules.Clone()
	m.Subjects = slices.Clone(m.Subjects)
	return m
}

// SameSubmission reports whether a and b record the same exchange: every field
// that comes from the submission and its scope is equal. The times the service
// sets (UpdatedAt, VisibleAt, ExpiresAt) may differ, as they do between a request
// and its retry.
func SameSubmission(a, b Message) bool {
	return a.ID == b.ID && a.Reference == b.Reference && a.Scope() == b.Scope() && a.Name == b.Name &&
		a.IPAddress == b.IPAddress && a.Method == b.Method && a.Path == b.Path && a.Route == b.Route && a.StatusCode == b.StatusCode &&
		a.CreatedAt.Equal(b.CreatedAt) && a.HasDuration == b.HasDuration && a.Duration == b.Duration &&
		sameContent(a.Request, b.Request) && sameContent(a.Response, b.Response)
}

func sameContent(a, b Content) bool {
	if a.Body != b.Body || a.ContentType != b.ContentType || a.Size != b.Size || len(a.Header) != len(b.Header) {
		return false
	}
	for name, values := range a.Header {
		other, ok := b.Header[name]
		if !ok || !slices.Equal(values, other) {
			return false
		}
	}
	return true
}

// Identity is what a submitter gets back for each message it sent.
type Identity struct {
	ID        string
	Reference string
	// Dropped says an ingest rule of the account's rule set kept the message
	// out of the store (a drop, or a sample it was not the one kept of): the
	// reply marks it "stored": false, and no read finds it.
	Dropped bool
}

// Identity returns the message's id and reference.
func (m Message) Identity() Identity { return Identity{ID: m.ID, Reference: m.Reference} }

// DurationMS is the duration in milliseconds as the API writes it (three
// decimals exactly), and false when the message has none.
func (m Message) DurationMS() (float64, bool) {
	return float64(m.Duration.Microseconds()) / 1000, m.HasDuration
}

// SubmissionDigest is a digest of what SameSubmission compares of m, keyed
// by the Idempotency-Key it came with and its scope: a retry of the request
// has the same, whatever rules changed the stored message since. The key is
// not stored (only the identities derived from it), so the digest tells
// nothing of a low-entropy value to whoever reads the store.
func SubmissionDigest(scope Scope, idempotencyKey string, m Message) string {
	mac := hmac.New(sha256.New, []byte("submission\x00"+scope.Account+"\x00"+scope.Domain+"\x00"+idempotencyKey))
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		mac.Write(n[:])
		mac.Write([]byte(s))
	}
	for _, s := range []string{m.ID, m.Reference, m.Name, m.IPAddress, m.Method, m.Path, m.Route,
		strconv.Itoa(m.StatusCode), m.CreatedAt.UTC().Format(time.RFC3339Nano), strconv.FormatBool(m.HasDuration), strconv.FormatInt(int64(m.Duration), 10)} {
		field(s)
	}
	for _, c := range []Content{m.Request, m.Response} {
		field(c.Body)
		field(c.ContentType)
		field(strconv.Itoa(c.Size))
		names := slices.Sorted(maps.Keys(c.Header))
		field(strconv.Itoa(len(names)))
		for _, name := range names {
			field(name)
			field(strconv.Itoa(len(c.Header[name])))
			for _, v := range c.Header[name] {
				field(v)
			}
		}
	}
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

package dayfile

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Where builds a WHERE clause over a day file's messages, and its
// arguments.
type Where struct {
	clauses []string
	Args    []any
}

// Add adds clause, whose parameters are args.
func (w *Where) Add(clause string, args ...any) {
	w.clauses = append(w.clauses, clause)
	w.Args = append(w.Args, args...)
}

func (w *Where) String() string { return strings.Join(w.clauses, " AND ") }

// AddSeqs narrows w to the messages whose seq is one of seqs: SQLite reads
// each by its rowid (with messages NOT INDEXED, or the planner may walk an
// index instead).
func (w *Where) AddSeqs(seqs []int64) {
	list := make([]byte, 0, 8*len(seqs)+2)
	list = append(list, '[')
	for i, seq := range seqs {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, seq, 10)
	}
	w.Add("seq IN (SELECT value FROM json_each(?))", string(append(list, ']')))
}

// ReadableWhere selects scope's messages readable at now that pass f's
// fields, except q and what the caller's Matcher checks again.
func ReadableWhere(scope domain.Scope, f domain.Filter, now time.Time) *Where {
	w := &Where{}
	w.Add("account = ?", scope.Account)
	w.Add("domain = ?", scope.Domain)
	w.Add("visible <= ?", now.UnixMicro())
	w.Add("expires > ?", now.UnixMicro())
	if f.Name != "" {
		w.Add("name = ?", f.Name)
	}
	if f.Method != "" {
		w.Add("method = ?", f.Method)
	}
	if f.IPAddress != "" {
		w.Add("ip_address = ?", f.IPAddress)
	}
	if f.Path != "" {
		w.Add("path = ?", f.Path)
	}
	if f.Route != "" {
		w.Add("route = ?", f.Route)
	}
	if f.PathPrefix != "" {
		// Bytes, not characters: the prefix may end inside a character.
		w.Add("substr(CAST(path AS BLOB), 1, ?) = CAST(? AS BLOB)", len(f.PathPrefix), f.PathPrefix)
	}
	if f.StatusMin != 0 {
		w.Add("status >= ?", f.StatusMin)
	}
	if f.StatusMax != 0 {
		w.Add("status <= ?", f.StatusMax)
	}
	if !f.From.IsZero() {
		w.Add("created >= ?", CeilMicro(f.From))
	}
	if !f.To.IsZero() {
		w.Add("created < ?", CeilMicro(f.To))
	}
	if f.MinDuration != nil {
		w.Add("duration >= ?", CeilMicro(time.UnixMicro(0).Add(*f.MinDuration)))
	}
	if f.MaxDuration != nil {
		w.Add("duration <= ?", f.MaxDuration.Microseconds())
	}
	if f.Hidden != nil && len(f.Hidden.Hashes) > 0 {
		// Not correlated: the hidden messages' seqs are read once, a
		// set the walk probes, not the index once a row.
		w.Add("messages.seq NOT IN ("+subjectSeqs+")", subjectSeqsArgs(f.Hidden.Hashes)...)
	}
	return w
}

// TallyWhere is ReadableWhere over the tallies: a filter's Hidden leaves
// out messages alone.
func TallyWhere(scope domain.Scope, f domain.Filter, now time.Time) *Where {
	f.Hidden = nil
	return ReadableWhere(scope, f, now)
}

// CeilMicro is t in Unix microseconds, as the files hold times, rounded up.
func CeilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

// jsonList is values as the JSON array json_each reads.
func jsonList(values []string) string {
	raw, _ := json.Marshal(values) // strings always encode
	return string(raw)
}

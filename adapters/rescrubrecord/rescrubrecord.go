// Package rescrubrecord is a re-scrub job (rules.RescrubJob) as the stores
// keep it: one struct that MongoDB encodes through its bson tags and
// Elasticsearch and SQLite through its json tags, times in Unix
// microseconds.
package rescrubrecord

import (
	"slices"

	"github.com/reqlog/reqlog/adapters/alertrecord"
	"github.com/reqlog/reqlog/domain/rules"
)

// Stored names of the fields queries use.
const (
	FieldAccount  = "account"
	FieldNumber   = "number"
	FieldState    = "state"
	FieldRevision = "revision"
)

// Record is one job.
type Record struct {
	Account      string   `bson:"account" json:"account"`
	Kind         string   `bson:"kind,omitempty" json:"kind,omitempty"`
	Number       int64    `bson:"number" json:"number"`
	Version      int64    `bson:"version" json:"version"`
	From         int64    `bson:"from" json:"from"`
	To           int64    `bson:"to" json:"to"`
	Applications []string `bson:"applications" json:"applications"`
	KeyID        string   `bson:"key_id" json:"key_id"`
	State        string   `bson:"state" json:"state"`
	CursorDomain string   `bson:"cursor_domain" json:"cursor_domain"`
	CursorAt     int64    `bson:"cursor_at" json:"cursor_at"`
	CursorID     string   `bson:"cursor_id" json:"cursor_id"`
	Scanned      int64    `bson:"scanned" json:"scanned"`
	Changed      int64    `bson:"changed" json:"changed"`
	Skipped      int64    `bson:"skipped" json:"skipped"`
	Error        string   `bson:"error" json:"error"`
	CreatedAt    int64    `bson:"created_at" json:"created_at"`
	UpdatedAt    int64    `bson:"updated_at" json:"updated_at"`
	FinishedAt   int64    `bson:"finished_at" json:"finished_at"`
	Owner        string   `bson:"owner" json:"owner"`
	LeaseUntil   int64    `bson:"lease_until" json:"lease_until"`
	Revision     int64    `bson:"revision" json:"revision"`
}

// Of is j as a record.
func Of(j rules.RescrubJob) Record {
	return Record{Account: j.Account, Kind: string(j.Kind), Number: j.Number, Version: j.Version, From: alertrecord.Micros(j.From), To: alertrecord.Micros(j.To),
		Applications: slices.Clone(j.Applications), KeyID: j.KeyID, State: string(j.State), CursorDomain: j.Cursor.Domain,
		CursorAt: alertrecord.Micros(j.Cursor.CreatedAt), CursorID: j.Cursor.ID, Scanned: j.Scanned, Changed: j.Changed,
		Skipped: j.Skipped, Error: j.Error, CreatedAt: alertrecord.Micros(j.CreatedAt), UpdatedAt: alertrecord.Micros(j.UpdatedAt),
		FinishedAt: alertrecord.Micros(j.FinishedAt), Owner: j.Owner, LeaseUntil: alertrecord.Micros(j.LeaseUntil), Revision: j.Revision}
}

// Job is r as the domain's job.
func (r Record) Job() rules.RescrubJob {
	return rules.RescrubJob{Account: r.Account, Kind: rules.RescrubKind(r.Kind), Number: r.Number, Version: r.Version, From: alertrecord.Time(r.From), To: alertrecord.Time(r.To),
		Applications: slices.Clone(r.Applications), KeyID: r.KeyID, State: rules.RescrubState(r.State),
		Cursor:  rules.RescrubCursor{Domain: r.CursorDomain, CreatedAt: alertrecord.Time(r.CursorAt), ID: r.CursorID},
		Scanned: r.Scanned, Changed: r.Changed, Skipped: r.Skipped, Error: r.Error, CreatedAt: alertrecord.Time(r.CreatedAt),
		UpdatedAt: alertrecord.Time(r.UpdatedAt), FinishedAt: alertrecord.Time(r.FinishedAt), Owner: r.Owner,
		LeaseUntil: alertrecord.Time(r.LeaseUntil), Revision: r.Revision}
}

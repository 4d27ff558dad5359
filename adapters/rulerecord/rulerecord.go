// Package rulerecord is a rule set's version as the document stores keep it:
// one struct that MongoDB encodes through its bson tags and Elasticsearch
// through its json tags, and the conversions to and from the domain. The
// rules themselves are their JSON (rules.Encode), which no query looks into.
// It is public for document stores in other repositories.
package rulerecord

import (
	"fmt"

	"github.com/reqlog/reqlog/adapters/alertrecord"
	"github.com/reqlog/reqlog/domain/rules"
)

// Stored names of the fields queries use.
const (
	FieldAccount = "account"
	FieldNumber  = "version"
)

// Record is one version of an account's rule set.
type Record struct {
	Account string `bson:"account" json:"account"`
	Number  int64  `bson:"version" json:"version"`
	KeyID   string `bson:"key_id" json:"key_id"`
	Reason  string `bson:"reason" json:"reason"`
	At      int64  `bson:"at" json:"at"` // Unix microseconds
	Rules   string `bson:"rules" json:"rules"`
}

// Of is v as a record.
func Of(v rules.Version) (Record, error) {
	raw, err := rules.Encode(v.Rules)
	if err != nil {
		return Record{}, err
	}
	return Record{Account: v.Account, Number: v.Number, KeyID: v.KeyID, Reason: v.Reason, At: alertrecord.Micros(v.At), Rules: string(raw)}, nil
}

// Version is r as the domain's version.
func (r Record) Version() (rules.Version, error) {
	rs, err := rules.Parse([]byte(r.Rules))
	if err != nil {
		return rules.Version{}, fmt.Errorf("rule set %s version %d: %w", r.Account, r.Number, err)
	}
	return rules.Version{Account: r.Account, Number: r.Number, Rules: rs, KeyID: r.KeyID, Reason: r.Reason, At: alertrecord.Time(r.At)}, nil
}

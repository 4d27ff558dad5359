package esalert

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.ErasureJournal = (*Store)(nil)

// erasures is the journal of erasures, "<prefix>-alert-erasures": one
// document per erasure under "<account>:<id>", its record as JSON in doc
// (kept in _source, not indexed), account and id indexed for the lists.
// A save is a plain write over the document: the journal's writers (the
// request, then the erasure job) move an erasure forward one after the
// other, and the port's contract is last writer wins, as on the other
// stores.
const erasures = "erasures"

// erasureDoc is a document of the journal.
type erasureDoc struct {
	Account string `json:"account"`
	ID      string `json:"id"`
	Doc     string `json:"doc"`
}

func erasureKey(account, id string) string { return account + ":" + id }

func (d erasureDoc) erasure() (erasure.Erasure, error) {
	var e erasure.Erasure
	if err := json.Unmarshal([]byte(d.Doc), &e); err != nil {
		return erasure.Erasure{}, fmt.Errorf("elastic: erasure %s: %w", d.ID, err)
	}
	return e, nil
}

// SaveErasure writes e over the document of its account and id.
func (a *Store) SaveErasure(ctx context.Context, e erasure.Erasure) error {
	doc, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("elastic: encode erasure: %w", err)
	}
	_, err = a.put(ctx, erasures, erasureKey(e.Account, e.ID), erasureDoc{Account: e.Account, ID: e.ID, Doc: string(doc)}, putAlways, 0, 0)
	return err
}

// Erasure returns account's erasure id (a realtime get).
func (a *Store) Erasure(ctx context.Context, account, id string) (erasure.Erasure, error) {
	g, err := getDoc[erasureDoc](ctx, a, erasures, erasureKey(account, id))
	switch {
	case err != nil:
		return erasure.Erasure{}, err
	case !g.Found || g.Source.Account != account:
		return erasure.Erasure{}, notFound("erasure", id)
	}
	return g.Source.erasure()
}

// Erasures returns account's erasures whose id sorts before before, newest
// first.
func (a *Store) Erasures(ctx context.Context, account, before string, limit int) ([]erasure.Erasure, error) {
	if limit <= 0 {
		return nil, nil
	}
	filter := []any{term("account", account)}
	if before != "" {
		filter = append(filter, rangeOf("id", map[string]any{"lt": before}))
	}
	return a.findErasures(ctx, filter, []any{desc("id")}, limit)
}

// AllErasures returns every account's erasures.
func (a *Store) AllErasures(ctx context.Context) ([]erasure.Erasure, error) {
	return a.findErasures(ctx, nil, []any{asc("account"), asc("id")}, 0)
}

// findErasures searches the journal (which refreshes it first), at most
// limit (0: all).
func (a *Store) findErasures(ctx context.Context, filter, sort []any, limit int) ([]erasure.Erasure, error) {
	hits, err := search[erasureDoc](ctx, a, erasures, filter, sort, limit)
	if err != nil {
		return nil, err
	}
	out := make([]erasure.Erasure, len(hits))
	for i, h := range hits {
		if out[i], err = h.Source.erasure(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

package sqlitealert

import (
	"context"
	"fmt"

	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.ErasureJournal = (*AlertStore)(nil)

// The journal of erasures lives in the alert file (alert-4.sql): one row
// per erasure, its domain record as JSON, replaced as it goes on.

func sameErasure(e erasure.Erasure) (erasure.Erasure, error) { return e, nil }

// SaveErasure writes e, replacing the row of its account and id.
func (a *AlertStore) SaveErasure(ctx context.Context, e erasure.Erasure) error {
	doc, err := encodeDoc(e)
	if err != nil {
		return err
	}
	_, err = a.exec(ctx, "save erasure", "INSERT OR REPLACE INTO erasures (account, id, doc) VALUES (?, ?, ?)", e.Account, e.ID, doc)
	return err
}

// Erasure returns account's erasure id.
func (a *AlertStore) Erasure(ctx context.Context, account, id string) (erasure.Erasure, error) {
	es, err := docs(ctx, a.read, "erasure", "SELECT doc FROM erasures WHERE account = ? AND id = ?", sameErasure, account, id)
	if err != nil {
		return erasure.Erasure{}, err
	}
	if len(es) == 0 {
		return erasure.Erasure{}, fmt.Errorf("sqlite: erasure %q: %w", id, ports.ErrNotFound)
	}
	return es[0], nil
}

// Erasures returns account's erasures before the id before, newest first.
func (a *AlertStore) Erasures(ctx context.Context, account, before string, limit int) ([]erasure.Erasure, error) {
	if before == "" {
		return docs(ctx, a.read, "erasures", "SELECT doc FROM erasures WHERE account = ? ORDER BY id DESC LIMIT ?", sameErasure, account, limit)
	}
	return docs(ctx, a.read, "erasures", "SELECT doc FROM erasures WHERE account = ? AND id < ? ORDER BY id DESC LIMIT ?",
		sameErasure, account, before, limit)
}

// AllErasures returns every account's erasures.
func (a *AlertStore) AllErasures(ctx context.Context) ([]erasure.Erasure, error) {
	return docs(ctx, a.read, "erasures", "SELECT doc FROM erasures", sameErasure)
}

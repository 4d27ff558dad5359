package sqlitealert

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"

	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.ErasureJournal = (*AlertStore)(nil)

// The journal of erasures lives in the alert file (alert-4.sql): one row
// per erasure, its domain record as JSON, replaced as it goes on.

func sameErasure(e erasure.Erasure) (erasure.Erasure, error) { return e, nil }

// saveErasure replaces the row of an erasure's account and id.
const saveErasure = "INSERT OR REPLACE INTO erasures (account, id, doc) VALUES (?, ?, ?)"

// SaveErasure writes e, replacing the row of its account and id.
func (a *AlertStore) SaveErasure(ctx context.Context, e erasure.Erasure) error {
	doc, err := encodeDoc(e)
	if err != nil {
		return err
	}
	_, err = a.exec(ctx, "save erasure", saveErasure, e.Account, e.ID, doc)
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

// ImportErasures writes every erasure of the alert file at path (another
// data directory's, read in one transaction) into this one, each replacing
// the row of its account and id, and returns how many: a restore keeps the
// journal of the directory it replaces, which knows of erasures asked after
// the backup.
func (a *AlertStore) ImportErasures(ctx context.Context, path string, busyTimeout time.Duration) (int, error) {
	src, err := sqlitedb.OpenToCopy(path, busyTimeout)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	es, err := docs(ctx, src, "erasures of "+path, "SELECT doc FROM erasures", sameErasure)
	if err != nil {
		return 0, err
	}
	err = a.inTx(ctx, "import erasures", func(tx *sql.Tx) error {
		for _, e := range es {
			doc, err := encodeDoc(e)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, saveErasure, e.Account, e.ID, doc); err != nil {
				return err
			}
		}
		return nil
	})
	return len(es), err
}

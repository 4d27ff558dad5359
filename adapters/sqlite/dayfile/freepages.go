package dayfile

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
)

// An erasure's deletions zero what they free (sqlitedb.SecureTx), but most
// of a file's free pages were freed before, by appends, whose secure_delete
// FAST leaves a freed page's bytes in it: FTS5's automerges free the pages
// of the segments they merge (the tokens of messages an erasure deletes
// later), a Hide's update or a page split frees b-tree pages. So an erasure
// marks the file (erasure.free_owed, day-12.sql) and the erasure job's
// expunge zeroes its free pages once (ZeroFreePages): a cost of the free
// pages, where a VACUUM's is the whole file's (docs/benchmarks.md,
// "Erasures").

// fillPagesPerRow bounds the blob of one row ZeroFreePages writes: 1,024
// pages, 32 MiB at 32 KiB.
const fillPagesPerRow = 1024

// oweFreePages marks, in tx, the file's free pages as owed zeroing.
func oweFreePages(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE erasure SET free_owed = 1`)
	return err
}

// ZeroFreePages overwrites every free page of the file with zeros when an
// erasure owes it (erasure.free_owed), in one transaction of the writer
// with secure_delete on: rows of zero-filled blobs take every page of the
// freelist (and a few from the file's end), then their delete frees them
// again, each overwritten with zeros (secure_delete). Ingest into the file
// waits for it. The WAL holds the pages until the caller truncates it.
func (f *File) ZeroFreePages(ctx context.Context) error {
	var owed bool
	if err := f.Write.QueryRowContext(ctx, `SELECT free_owed FROM erasure`).Scan(&owed); err != nil || !owed {
		return err
	}
	return sqlitedb.SecureTx(ctx, f.Write, func(tx *sql.Tx) error {
		if err := fillFreePages(ctx, tx); err != nil {
			return fmt.Errorf("zero the free pages: %w", err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE erasure SET free_owed = 0`)
		return err
	})
}

// fillFreePages writes, in tx, zero-filled rows into free_fill that take
// every free page, then deletes them.
func fillFreePages(ctx context.Context, tx *sql.Tx) error {
	var free, pageSize int64
	if err := tx.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil || free == 0 {
		return err
	}
	if err := tx.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return err
	}
	// An overflow page holds its page less a 4-byte link (less the bytes a
	// file reserves, which only takes more pages); the 2 more are for the
	// row's cell and a row's last page. A page taken from the file's end
	// rather than the freelist is zeroed as well when freed.
	for left := free + 2; left > 0; {
		pages := min(left, fillPagesPerRow)
		if _, err := tx.ExecContext(ctx, `INSERT INTO free_fill(zeros) VALUES (zeroblob(?))`, pages*(pageSize-4)); err != nil {
			return err
		}
		left -= pages
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM free_fill`)
	return err
}

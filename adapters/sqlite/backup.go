package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
)

// A backup directory holds a copy of each file of a data directory (the day
// files, the alert file with its rules, endpoints, webhook secrets, states
// and rule sets, reqlog-store.json and the secrets reqlogd keeps), each a
// consistent copy of its file at one instant of the backup, and
// backupManifestName. It is itself a data directory: Restore copies it into
// an empty one, and reqlogd can also start on it (which then writes into
// it).

// backupManifestName is the backup's record of itself: for each day file
// copied, its dayMark then. A day file's messages are only ever added to
// (retention drops whole files), so a day whose mark has not changed since
// is not copied again.
const backupManifestName = "reqlog-backup.json"

// backupFormat is the manifest's format.
const backupFormat = 1

type backupManifest struct {
	Format int                `json:"format"`
	Taken  time.Time          `json:"taken"`
	Days   map[string]dayMark `json:"days"` // by day file name: when copied
}

// dayMark tells a day file's contents apart from any earlier ones: Append
// only adds messages, each with an id of its own, so the count and the
// last message's id change with every write. The id also tells a file
// retention dropped and a late message made again from the one it
// replaces, and Version a migrated file from the one before.
type dayMark struct {
	Messages int64  `json:"messages"`
	Last     string `json:"last,omitempty"` // id of the message stored last
	Version  int    `json:"version"`        // schema version (user_version)
}

// BackupReport is what Backup did, by file name.
type BackupReport struct {
	// Copied are the files copied.
	Copied []string
	// Unchanged are the day files whose messages were the same as at the
	// backup before into the directory: not copied again.
	Unchanged []string
	// Removed are the day files the backup held that the data directory no
	// longer does (retention dropped them).
	Removed []string
}

// Backup copies the data directory dataDir into dest (created 0700 if
// needed), beside a store running on dataDir or without one: each SQLite
// file through SQLite (VACUUM INTO, a read transaction of its own, so that
// writes go on; the copy is consistent and compacted), the other files as
// they are, every copy synced, mode 0600 and renamed into place. A day file
// unchanged since the last backup into dest is not copied again. It changes
// nothing in dataDir but what SQLite does on opening a file (its -wal and
// -shm, and the checkpoint of a -wal left there). A file it cannot copy
// is in the error, and the others are copied; dest keeps its earlier copy of
// that file. Two backups into one dest exclude each other.
func Backup(ctx context.Context, dataDir, dest string, busyTimeout time.Duration) (BackupReport, error) {
	var report BackupReport
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return report, fmt.Errorf("sqlite: backup: data directory %s: %w", dataDir, err)
	}
	release, err := dayfile.Lock(dest)
	if err != nil {
		return report, fmt.Errorf("sqlite: backup into %s: %w", dest, err)
	}
	defer func() { _ = release() }()
	before, err := readBackupManifest(dest)
	if err != nil {
		return report, err
	}
	now := backupManifest{Format: backupFormat, Taken: time.Now().UTC(), Days: map[string]dayMark{}}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || skippedInBackup(name) {
			continue
		}
		src, to := filepath.Join(dataDir, name), filepath.Join(dest, name)
		switch {
		case dayfile.IsDayFile(name):
			mark, copied, err := backupDay(ctx, src, to, before.Days, busyTimeout)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // dropped by retention meanwhile
			case err != nil:
				errs = append(errs, err)
				if m, ok := before.Days[name]; ok {
					now.Days[name] = m // dest keeps the earlier copy
				}
				continue
			}
			now.Days[name] = mark
			if !copied {
				report.Unchanged = append(report.Unchanged, name)
				continue
			}
		case name == sqlitealert.FileName || name == rollupfile.FileName:
			if err := copyDatabase(ctx, src, to, busyTimeout); err != nil {
				errs = append(errs, err)
				continue
			}
		default:
			if err := sqlitedb.CopyFile(src, to); err != nil {
				errs = append(errs, fmt.Errorf("sqlite: backup of %s: %w", src, err))
				continue
			}
		}
		report.Copied = append(report.Copied, name)
	}
	for name := range before.Days {
		if _, kept := now.Days[name]; !kept {
			if err := os.Remove(filepath.Join(dest, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			report.Removed = append(report.Removed, name)
		}
	}
	slices.Sort(report.Removed)
	if err := writeBackupManifest(dest, now); err != nil {
		errs = append(errs, err)
	}
	return report, errors.Join(errs...)
}

// skippedInBackup: the lock, SQLite's companions of a database, what a
// copy writes before renaming it, and the backup's own manifest.
func skippedInBackup(name string) bool {
	return dayfile.Housekeeping(name) || strings.HasSuffix(name, ".tmp") || name == backupManifestName
}

// backupDay copies the day file src to dest unless its mark is the one the
// last backup recorded (last) and dest holds that copy, and returns its
// mark and whether it copied it. The mark is read before the copy, which is
// then at least as new as the mark says.
func backupDay(ctx context.Context, src, dest string, last map[string]dayMark, busyTimeout time.Duration) (mark dayMark, copied bool, err error) {
	if _, err := os.Stat(src); err != nil {
		return mark, false, err
	}
	db, err := sqlitedb.OpenToCopy(src, busyTimeout)
	if err != nil {
		return mark, false, err
	}
	defer db.Close()
	if mark, err = dayMarkOf(ctx, db); err != nil {
		return mark, false, fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	if m, ok := last[filepath.Base(src)]; ok && m == mark {
		if _, err := os.Stat(dest); err == nil {
			return mark, false, nil
		}
	}
	if err := sqlitedb.Copy(ctx, db, dest); err != nil {
		return mark, false, fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	return mark, true, nil
}

// dayMarkOf reads a day file's mark in one read transaction.
func dayMarkOf(ctx context.Context, db *sql.DB) (dayMark, error) {
	var m dayMark
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return m, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&m.Version); err != nil {
		return m, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT messages FROM day`).Scan(&m.Messages); err != nil {
		return m, err
	}
	err = tx.QueryRowContext(ctx, `SELECT id FROM messages ORDER BY seq DESC LIMIT 1`).Scan(&m.Last)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return m, err
}

// copyDatabase copies the SQLite file src to dest (sqlitedb.Copy).
func copyDatabase(ctx context.Context, src, dest string, busyTimeout time.Duration) error {
	db, err := sqlitedb.OpenToCopy(src, busyTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := sqlitedb.Copy(ctx, db, dest); err != nil {
		return fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	return nil
}

// readBackupManifest reads dest's manifest; none is a first backup. A
// directory that holds other files but no manifest is not one to back up
// into: it may be a data directory.
func readBackupManifest(dest string) (backupManifest, error) {
	m := backupManifest{Days: map[string]dayMark{}}
	path := filepath.Join(dest, backupManifestName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, checkNoData(dest, "back up into it")
	}
	if err != nil {
		return m, fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Format != backupFormat {
		return m, fmt.Errorf("sqlite: %s is not a backup manifest of reqlog (format %d)", path, backupFormat)
	}
	if m.Days == nil {
		m.Days = map[string]dayMark{}
	}
	return m, nil
}

// writeBackupManifest records m in dest, atomically, once every copy is in
// place.
func writeBackupManifest(dest string, m backupManifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := sqlitedb.WriteFile(filepath.Join(dest, backupManifestName), append(data, '\n')); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return sqlitedb.SyncDir(dest)
}

// checkNoData fails when dir holds a file of a store's data: the directory
// is not one to do what into.
func checkNoData(dir, what string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", dir, err)
	}
	for _, e := range entries {
		if name := e.Name(); !dayfile.Housekeeping(name) {
			return fmt.Errorf("sqlite: %s holds %s and is not a backup of reqlog's: choose an empty directory to %s", dir, name, what)
		}
	}
	return nil
}

// RestoreOptions are Restore's choices.
type RestoreOptions struct {
	// ErasuresFrom, when set, is the data directory the backup replaces
	// (moved aside): its journal of erasures replaces the backup's, erasure
	// by erasure (sqlitealert.AlertStore.ImportErasures), so that the next
	// start erases again from the restored day files what erasures asked
	// after the backup erased (docs/erasure.md).
	ErasuresFrom string
}

// Restore copies the backup in backupDir (Backup's) into dataDir, which
// must hold no data (it is created if needed), under dataDir's lock: no
// store may run on it meanwhile. Every file is copied as it is, synced and
// mode 0600. A store then opens dataDir as it was when the backup was taken,
// but for the journal of erasures with opts.ErasuresFrom.
func Restore(ctx context.Context, backupDir, dataDir string, opts RestoreOptions) error {
	if _, err := os.Stat(filepath.Join(backupDir, backupManifestName)); err != nil {
		return fmt.Errorf("sqlite: %s is not a backup of reqlog's (no %s): %w", backupDir, backupManifestName, err)
	}
	journal := ""
	if opts.ErasuresFrom != "" {
		journal = filepath.Join(opts.ErasuresFrom, sqlitealert.FileName)
		if _, err := os.Stat(journal); err != nil {
			return fmt.Errorf("sqlite: restore: the journal of erasures to keep: %w", err)
		}
	}
	release, err := dayfile.Lock(dataDir)
	if err != nil {
		return fmt.Errorf("sqlite: restore into %s: %w", dataDir, err)
	}
	defer func() { _ = release() }()
	if err := checkNoData(dataDir, "restore into it (move the data directory aside first)"); err != nil {
		return err
	}
	entries, err := os.ReadDir(backupDir)
	if err != nil {
		return fmt.Errorf("sqlite: restore from %s: %w", backupDir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || skippedInBackup(name) {
			continue
		}
		if err := sqlitedb.CopyFile(filepath.Join(backupDir, name), filepath.Join(dataDir, name)); err != nil {
			return fmt.Errorf("sqlite: restore of %s: %w", name, err)
		}
	}
	if journal != "" {
		if err := keepErasures(ctx, journal, dataDir); err != nil {
			return err
		}
	}
	return sqlitedb.SyncDir(dataDir)
}

// keepErasures imports the erasures of the alert file journal into
// dataDir's, which it opens (migrating a backup's older file, as a start
// would) and closes.
func keepErasures(ctx context.Context, journal, dataDir string) error {
	cfg := DefaultConfig()
	alerts, err := sqlitealert.OpenAlertStore(ctx, dataDir, cfg.fileOptions())
	if err != nil {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	_, err = alerts.ImportErasures(ctx, journal, cfg.BusyTimeout)
	if closeErr := alerts.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("sqlite: restore: the erasures of %s: %w", journal, err)
	}
	return nil
}

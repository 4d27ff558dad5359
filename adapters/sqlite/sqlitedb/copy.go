package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"
)

// OpenToCopy opens the file at path to read and copy it (Copy), beside any
// other connection, of this process or another, that writes it: one
// connection, which never creates the file (mode=rw) and has no query_only,
// since VACUUM INTO writes its copy through it. Close it after.
func OpenToCopy(path string, busyTimeout time.Duration) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	db, err := sql.Open(DriverName, "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Copy writes a consistent copy of db's file (OpenToCopy) to dest with
// VACUUM INTO: one read transaction, so writers go on, and a copy compacted
// that keeps the file's marks and version. It is written beside dest,
// synced and made the owner's only, then renamed over dest, so dest is
// either the copy before or this one.
func Copy(ctx context.Context, db *sql.DB, dest string) error {
	tmp := dest + ".tmp"
	if err := removeIfThere(tmp); err != nil {
		return err
	}
	// VACUUM INTO writes into an empty file as it finds it: 0600 from the
	// start, where SQLite would create it 0644.
	if err := CreatePrivate(tmp); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return errors.Join(err, removeIfThere(tmp))
	}
	if err := syncPrivate(tmp); err != nil {
		return errors.Join(err, removeIfThere(tmp))
	}
	return os.Rename(tmp, dest)
}

// CopyFile copies the plain file src to dest as Copy writes its copies:
// beside dest, synced, the owner's only, renamed over it.
func CopyFile(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomically(dest, func(f *os.File) error {
		_, err := io.Copy(f, in)
		return err
	})
}

// WriteFile writes data to path as CopyFile writes a copy.
func WriteFile(path string, data []byte) error {
	return writeAtomically(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// writeAtomically fills a new file beside dest, syncs it, makes it the
// owner's only and renames it over dest.
func writeAtomically(dest string, fill func(*os.File) error) error {
	tmp := dest + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Chmod(tmp, 0o600) // were it there before, looser
	}
	if err != nil {
		return errors.Join(err, removeIfThere(tmp))
	}
	return os.Rename(tmp, dest)
}

// SyncDir makes the renames and removals in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// syncPrivate makes path its owner's only and syncs it to disk.
func syncPrivate(path string) error {
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

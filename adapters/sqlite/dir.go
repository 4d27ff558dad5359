package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The data directory holds, besides the day files and their -wal and -shm
// companions:
//   - lockName, locked with flock(2) for as long as a store has the directory
//     open: a second process refuses to start, and the kernel releases the
//     lock of a process that dies, even by kill -9;
//   - metaName, the schema version of the directory, written atomically.
//
// Other files are left alone, except that a file named like a database
// (*.db, messages-*) that is not a day file is refused: reqlog would not
// read it, and it may be one renamed by mistake.
const (
	lockName = "reqlog.lock"
	metaName = "reqlog-store.json"
	// storeKind marks the metadata file as this store's.
	storeKind = "reqlog-sqlite"
)

// meta is the content of metaName.
type meta struct {
	Store         string `json:"store"`
	SchemaVersion int    `json:"schema_version"`
}

// dirLock is the flock'd lock file of an open data directory.
type dirLock struct{ f *os.File }

// lockDir creates dir if needed and takes its lock, or says which process
// holds it.
func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: data directory %s: lock file: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("sqlite: data directory %s is in use by another reqlog (pid %s): "+
				"one process per data directory", dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("sqlite: data directory %s: locking %s: %w", dir, path, err)
	}
	// The holder's pid, for the message above; best effort.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// errLocked: another open file description holds the lock.
var errLocked = errors.New("locked")

func (l *dirLock) release() error {
	return l.f.Close() // closing the descriptor releases the flock
}

// readMeta checks the directory's schema version, writing it into a new
// directory, and lists the days present. A directory of an older version is
// migrated by openDay, file by file, and its version written afterwards
// (writeMeta); a newer one is refused.
func readMeta(dir string) (days []time.Time, older bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: data directory %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if day, ok := parseDayName(name); ok {
			if !e.Type().IsRegular() {
				return nil, false, fmt.Errorf("sqlite: %s is not a regular file", filepath.Join(dir, name))
			}
			days = append(days, day)
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "-wal"), "-shm"), "-journal")
		if _, ok := parseDayName(base); ok {
			continue
		}
		if strings.HasSuffix(name, daySuffix) || strings.HasPrefix(name, dayPrefix) {
			return nil, false, fmt.Errorf("sqlite: %s is not a day file of reqlog (%syyyy-mm-dd%s): move it out of the data directory",
				filepath.Join(dir, name), dayPrefix, daySuffix)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })

	path := filepath.Join(dir, metaName)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(days) == 0:
		return days, false, writeMeta(dir)
	case errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("sqlite: %s is missing but the directory holds day files: "+
			"it is not a data directory reqlog wrote, or the file was deleted", path)
	case err != nil:
		return nil, false, fmt.Errorf("sqlite: %w", err)
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil || m.Store != storeKind || m.SchemaVersion < 1 {
		return nil, false, fmt.Errorf("sqlite: %s is not reqlog's metadata file (want {\"store\":%q,\"schema_version\":n})", path, storeKind)
	}
	if m.SchemaVersion > daySchema().Version() {
		return nil, false, fmt.Errorf("sqlite: %s: the data directory has schema version %d, newer than this reqlog's %d: run a newer reqlog",
			path, m.SchemaVersion, daySchema().Version())
	}
	return days, m.SchemaVersion < daySchema().Version(), nil
}

// writeMeta records this schema version: a new file written, synced and
// renamed over the old one, then the directory synced.
func writeMeta(dir string) error {
	data, err := json.Marshal(meta{Store: storeKind, SchemaVersion: daySchema().Version()})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, metaName)
	tmp := path + ".tmp"
	if err := writeSynced(tmp, append(data, '\n')); err != nil {
		return fmt.Errorf("sqlite: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sqlite: writing %s: %w", path, err)
	}
	return syncDir(dir)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// syncDir makes a rename or unlink in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: syncing %s: %w", dir, err)
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

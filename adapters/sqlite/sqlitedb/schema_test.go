package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// testSchema makes table a at 1, adds column b at 2 and fills it at 3.
func testSchema() Schema {
	return Schema{Kind: "test file", ApplicationID: 0x74657374, Migrations: []Migration{
		{To: 1, SQL: "CREATE TABLE a (x INTEGER)"},
		{To: 2, SQL: "ALTER TABLE a ADD COLUMN b TEXT"},
		{To: 3, SQL: "", Then: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE a SET b = 'filled'")
			return err
		}},
	}}
}

func open(t *testing.T, path string, s Schema) (*DB, error) {
	t.Helper()
	db, err := Open(t.Context(), path, Options{Readers: 1}, s, true)
	if err == nil {
		t.Cleanup(func() { _ = db.Close() })
	}
	return db, err
}

// marks reads a file's application_id and user_version.
func marks(t *testing.T, path string) (app, version int) {
	t.Helper()
	db, err := sql.Open(DriverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA application_id").Scan(&app); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	return app, version
}

// A new file runs every migration in order and is marked with the last
// version; an older one runs those after its version only, its rows kept.
func TestMigrationsMakeAndTakeFiles(t *testing.T) {
	s := testSchema()
	path := filepath.Join(t.TempDir(), "new.db")
	db, err := open(t, path, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.Exec("INSERT INTO a (x) VALUES (1)"); err != nil {
		t.Fatalf("a new file lacks the migrations' table and column: %v", err)
	}
	db.Close()
	if app, version := marks(t, path); app != 0x74657374 || version != 3 {
		t.Fatalf("a new file is marked %#x, version %d; want %#x, 3", app, version, s.ApplicationID)
	}

	older := filepath.Join(t.TempDir(), "older.db")
	s.Migrations = s.Migrations[:1]
	db, err = open(t, older, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.Exec("INSERT INTO a (x) VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = open(t, older, testSchema())
	if err != nil {
		t.Fatal(err)
	}
	var x int
	var b string
	if err := db.Read.QueryRow("SELECT x, b FROM a").Scan(&x, &b); err != nil || x != 7 || b != "filled" {
		t.Fatalf("after migrating from version 1: %d, %q, %v; want 7, filled", x, b, err)
	}
	if _, version := marks(t, older); version != 3 {
		t.Fatalf("a migrated file has version %d, want 3", version)
	}
}

// A migration that fails leaves the file at its version, and the error
// names the file and the version; so does a version no migration leaves
// from, a newer version, or a file of another kind.
func TestUnusableFilesAreRefusedUnchanged(t *testing.T) {
	s := testSchema()
	dir := t.TempDir()
	older := filepath.Join(dir, "older.db")
	first := s
	first.Migrations = s.Migrations[:1]
	db, err := open(t, older, first)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	failing := testSchema()
	failing.Migrations[2].Then = func(context.Context, *sql.Tx) error { return errors.New("planted") }
	_, err = open(t, older, failing)
	if err == nil || !strings.Contains(err.Error(), older) || !strings.Contains(err.Error(), "schema version 2") {
		t.Fatalf("a failing migration: %v; want an error naming the file and version 2", err)
	}
	if _, version := marks(t, older); version != 1 {
		t.Fatalf("after a failed migration the file has version %d, want 1", version)
	}

	gap := testSchema()
	gap.Migrations = append(gap.Migrations[:1:1], gap.Migrations[2])
	if _, err := open(t, older, gap); err == nil || !strings.Contains(err.Error(), "cannot migrate") {
		t.Fatalf("migrations with a gap: %v; want cannot migrate", err)
	}

	db, err = open(t, older, testSchema())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := open(t, older, first); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a file of version 3 opened as of version 1: %v; want it refused as newer", err)
	}

	other := testSchema()
	other.ApplicationID = 0x6f746872
	if _, err := open(t, older, other); err == nil || !strings.Contains(err.Error(), "not a reqlog test file") {
		t.Fatalf("a file of another kind: %v; want it refused", err)
	}
}

// A file with tables but no marks is refused, unless its kind adopts such
// files as version 0: then it runs every migration, its rows kept.
func TestUnmarkedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unmarked.db")
	plain, err := sql.Open(DriverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Exec("CREATE TABLE a (x INTEGER); INSERT INTO a (x) VALUES (5)"); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	s := testSchema()
	if _, err := open(t, path, s); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("an unmarked file: %v; want it refused, named", err)
	}
	s.AdoptUnmarked = true
	s.Migrations[0].SQL = "CREATE TABLE IF NOT EXISTS a (x INTEGER)"
	db, err := open(t, path, s)
	if err != nil {
		t.Fatal(err)
	}
	var b string
	if err := db.Read.QueryRow("SELECT b FROM a WHERE x = 5").Scan(&b); err != nil || b != "filled" {
		t.Fatalf("an adopted file's row: %q, %v; want it migrated", b, err)
	}
}

// A new file takes the schema's page size; an existing one keeps its own.
func TestPageSizeOfNewFiles(t *testing.T) {
	pageSize := func(db *DB) int {
		t.Helper()
		var size int
		if err := db.Read.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
			t.Fatal(err)
		}
		return size
	}
	path := filepath.Join(t.TempDir(), "paged.db")
	s := testSchema()
	s.PageSize = 16384
	db, err := open(t, path, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := pageSize(db); got != 16384 {
		t.Fatalf("a new file's page size is %d, want the schema's 16384", got)
	}
	db.Close()
	s.PageSize = 8192
	if db, err = open(t, path, s); err != nil {
		t.Fatal(err)
	}
	if got := pageSize(db); got != 16384 {
		t.Fatalf("an existing file's page size is %d, want its own 16384", got)
	}
}

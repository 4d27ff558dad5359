package rollupfile

import (
	"path/filepath"
	"testing"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// A rollups file of version 1 keeps its rollups as the policy's part's once
// migrated, and then holds a class's rollup of the same minute beside them.
func TestVersion1sRollupsAreThePolicysPart(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	v1 := schema()
	v1.Migrations = v1.Migrations[:1]
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, FileName), sqlitedb.Options{}, v1, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.ExecContext(ctx, `INSERT INTO rollups(account, domain, minute, name, data) VALUES ('acme', 'live', 120, 'shop', x'01')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	k, err := Open(ctx, dir, sqlitedb.Options{})
	if err != nil {
		t.Fatalf("opening the version 1 file: %v", err)
	}
	defer k.Close()
	if _, err := k.db.Write.ExecContext(ctx, `INSERT INTO rollups(account, domain, minute, name, part, data) VALUES ('acme', 'live', 120, 'shop', 'r0123456789abcdef', x'02')`); err != nil {
		t.Fatalf("a class's rollup of the same minute: %v", err)
	}
	var parts []string
	err = k.Each(ctx, domain.Scope{Account: "acme", Domain: "live"}, "", 0, 3600, func(minute int64, name, part string, data []byte) error {
		parts = append(parts, part)
		return nil
	})
	if err != nil || len(parts) != 2 || parts[0] != "" || parts[1] != "r0123456789abcdef" {
		t.Errorf("the minute's parts: %q, %v; want the policy's, then the class's", parts, err)
	}
}

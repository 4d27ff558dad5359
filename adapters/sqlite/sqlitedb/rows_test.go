package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"testing"
)

// EachRow gives every row's values, with its arguments bound, and stops
// within 256 rows of its context's end: the driver's rows do not watch it.
func TestEachRow(t *testing.T) {
	db, err := sql.Open(DriverName, filepath.Join(t.TempDir(), "rows.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (n INTEGER NOT NULL, s TEXT);
		WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10000)
		INSERT INTO t SELECT n, CASE WHEN n % 2 = 0 THEN 'even' END FROM c`); err != nil {
		t.Fatal(err)
	}
	var sum, evens int64
	err = EachRow(t.Context(), db, `SELECT n, s FROM t WHERE n > ?`, []any{100}, func(row []driver.Value) error {
		sum += row[0].(int64)
		if TextOf(row[1]) == "even" {
			evens++
		}
		return nil
	})
	if err != nil || sum != 10000*10001/2-100*101/2 || evens != 4950 {
		t.Fatalf("sum %d, %d evens, %v", sum, evens, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	read := 0
	err = EachRow(ctx, db, `SELECT n, s FROM t`, nil, func([]driver.Value) error {
		if read++; read == 1000 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || read >= 1000+256 {
		t.Fatalf("cancelled at row 1000: %d rows read, %v", read, err)
	}
}

// IntSet holds each integer of the first column once, and refuses a row
// that is not a non-negative integer.
func TestIntSet(t *testing.T) {
	db, err := sql.Open(DriverName, filepath.Join(t.TempDir(), "set.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (n); INSERT INTO t VALUES (3), (0), (3), (70), (-1), ('x')`); err != nil {
		t.Fatal(err)
	}
	set, err := IntSet(t.Context(), db, `SELECT n FROM t WHERE typeof(n) = 'integer' AND n >= ?`, 0)
	if err != nil || set.Count() != 3 || !set.Test(0) || !set.Test(3) || !set.Test(70) {
		t.Fatalf("%v, %v; want 0, 3 and 70", set, err)
	}
	if _, err := IntSet(t.Context(), db, `SELECT n FROM t`); err == nil {
		t.Fatal("-1 and 'x' taken into the set")
	}
}

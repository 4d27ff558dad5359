// Package drivers compares the two pure-Go SQLite drivers on what the reqlog
// store does most: a batch insert of 1.8 KB messages with a contentless FTS5
// word index in one transaction (WAL, synchronous=FULL), and a point read by
// id. It is a module of its own so that the driver not chosen stays out of
// reqlog's go.mod. Run: cd docs/bench/sqlite-drivers && go test -bench . -benchtime 20x
package drivers

import (
	"database/sql"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	ncruces "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	_ "modernc.org/sqlite"
)

const batch = 500

// body is about the bench's 1.8 KB submission: headers and two JSON bodies.
func body(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%d,"status":"shipped","customer":{"email":"ada%d@example.com"},"items":[`, i, i)
	for j := range 12 {
		fmt.Fprintf(&b, `{"sku":"SKU-%05d","name":"standard item","qty":%d,"price":%d.5},`, j+i, j, 12+j)
	}
	b.WriteString(`{}]} Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 application/json gzip br envoy`)
	return b.String()
}

// words is the message's words as the store indexes them: a base32 hash each.
func words(text string) string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '@')
	}) {
		h := fnv.New64a()
		h.Write([]byte(w))
		out = append(out, fmt.Sprintf("%013x", h.Sum64()))
	}
	return strings.Join(out, " ")
}

const schema = `
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, account TEXT, domain TEXT,
  name TEXT, path TEXT, status INTEGER, created INTEGER, body TEXT);
CREATE INDEX IF NOT EXISTS by_scope ON messages(account, domain, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS by_name ON messages(account, domain, name, created DESC, id DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(w, content='', columnsize=0, tokenize='ascii');`

func open(b *testing.B, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	if driver == "sqlite3" { // ncruces: FTS5 is registered on each connection
		db.Close()
		db, err = ncruces.Open(dsn, fts5.Register)
	}
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, s := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", schema} {
		if _, err := db.Exec(s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
	b.Cleanup(func() { db.Close() })
	return db
}

var drivers = []struct{ name, driver string }{{"modernc", "sqlite"}, {"ncruces", "sqlite3"}}

func BenchmarkInsertBatch(b *testing.B) {
	bodies := make([]string, batch)
	tokens := make([]string, batch)
	for i := range bodies {
		bodies[i] = body(i)
		tokens[i] = words(bodies[i])
	}
	for _, index := range []bool{true, false} {
		for _, d := range drivers {
			b.Run(fmt.Sprintf("%s/index=%v", d.name, index), func(b *testing.B) {
				db := open(b, d.driver, "file:"+filepath.Join(b.TempDir(), "d.db"))
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					ins, _ := tx.Prepare(`INSERT INTO messages(id, account, domain, name, path, status, created, body) VALUES (?,?,?,?,?,?,?,?)`)
					words, _ := tx.Prepare(`INSERT INTO words(rowid, w) VALUES (?, ?)`)
					for i := range batch {
						n++
						res, err := ins.Exec(fmt.Sprintf("%036d", n), "acme", "live", "shop", "/v1/orders", 200, n, bodies[i])
						if err != nil {
							b.Fatal(err)
						}
						if index {
							seq, _ := res.LastInsertId()
							if _, err := words.Exec(seq, tokens[i]); err != nil {
								b.Fatal(err)
							}
						}
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

func BenchmarkPointRead(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			db := open(b, d.driver, "file:"+filepath.Join(b.TempDir(), "d.db"))
			tx, _ := db.Begin()
			const n = 20000
			for i := range n {
				tx.Exec(`INSERT INTO messages(id, account, domain, name, path, status, created, body) VALUES (?,?,?,?,?,?,?,?)`,
					fmt.Sprintf("%036d", i), "acme", "live", "shop", "/v1/orders", 200, i, body(i))
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			db.SetMaxOpenConns(2)
			b.ReportAllocs()
			for b.Loop() {
				var got string
				if err := db.QueryRow(`SELECT body FROM messages WHERE id = ?`, fmt.Sprintf("%036d", rand.N(n))).Scan(&got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

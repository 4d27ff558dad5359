package mongo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// What a re-scrub's rewrite leaves in the files of FerretDB on SQLite (the
// tests' embedded server; docs/rules.md): the store replaces each
// document's fields and ExpungeRewritten has nothing to do, so the old
// bytes are in the WAL until a checkpoint, and then in the database file's
// freed space unless FerretDB's SQLite URL sets secure_delete, with which
// they are gone once FerretDB has closed (checkpointed) its files.
func TestRescrubOnTheDiskOfFerretDB(t *testing.T) {
	for _, c := range []struct {
		name    string
		pragmas []string
	}{{"default", nil}, {"secure_delete", []string{"secure_delete(1)"}}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			srv, err := mongotest.StartServerWithPragmas(ctx, dir, c.pragmas...)
			if err != nil {
				t.Skipf("embedded FerretDB: %v", err)
			}
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					_ = srv.Stop(context.Background())
				}
			})
			held := rewriteACanary(ctx, t, srv.URI(), dir)
			t.Logf("running, after the rewrite, files holding the old value: %v", held)
			if err := srv.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			stopped = true
			held = conformance.FilesHolding(t, dir, rewrittenCanary)
			t.Logf("stopped (WAL checkpointed), files holding the old value: %v", held)
			if c.pragmas != nil && len(held) > 0 {
				t.Errorf("with %v the old value is still in %v", c.pragmas, held)
			}
		})
	}
}

const rewrittenCanary = "cnryferret7q"

// rewriteACanary stores messages holding rewrittenCanary on the server at
// uri, whose files are in dir, rewrites them without it as a re-scrub does,
// checks it is not read back, and returns the files that hold it then.
func rewriteACanary(ctx context.Context, t *testing.T, uri, dir string) []string {
	t.Helper()
	s, err := mongo.New(ctx, mongo.Config{URI: uri, Database: "rescrubdisk"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	var msgs []domain.Message
	for i := range 20 {
		msgs = append(msgs, newMessage(t, at.Add(time.Duration(i)*time.Millisecond), func(m *domain.Message) {
			m.Request.Body = `{"email":"` + rewrittenCanary + `@example.com","pad":"` + strings.Repeat("x", 2000) + `"}`
		}))
	}
	if err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if held := conformance.FilesHolding(t, dir, rewrittenCanary); len(held) == 0 {
		t.Fatal("before the rewrite no file holds the value: the test proves nothing")
	}
	var rewriter ports.MessageRewriter = s
	scan := ports.RewriteScan{Scope: scope, From: at.Add(-time.Second), To: at.Add(time.Minute), Limit: 100}
	page, err := rewriter.ScanForRewrite(ctx, scan)
	if err != nil || len(page) != len(msgs) {
		t.Fatalf("scan: %d messages, %v", len(page), err)
	}
	for i := range page {
		page[i].Request.Body = strings.ReplaceAll(page[i].Request.Body, rewrittenCanary, "***")
		page[i].Rules.Rescrubbed = 1
	}
	if err := rewriter.RewriteMessages(ctx, page); err != nil {
		t.Fatal(err)
	}
	if err := rewriter.ExpungeRewritten(ctx, scan.From, scan.To); err != nil {
		t.Fatal(err)
	}
	again, err := rewriter.ScanForRewrite(ctx, scan)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range again {
		if strings.Contains(m.Request.Body, rewrittenCanary) {
			t.Fatalf("message %s still reads %q", m.ID, m.Request.Body)
		}
	}
	return conformance.FilesHolding(t, dir, rewrittenCanary)
}

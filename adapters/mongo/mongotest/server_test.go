package mongotest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
)

// reqlog-devstore passes a relative directory; FerretDB needs an absolute one.
func TestStartServerWithARelativeDirectory(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	if err := os.Mkdir("state", 0o700); err != nil {
		t.Fatal(err)
	}
	srv, err := mongotest.StartServer(t.Context(), "state")
	if err != nil {
		t.Fatalf("StartServer with a relative directory: %v", err)
	}
	defer func() { _ = srv.Stop(t.Context()) }()
	if want := filepath.Join(base, "state"); srv.Dir() != want {
		t.Errorf("Dir() = %q, want %q", srv.Dir(), want)
	}
	c := mongotest.Connect(t, srv.URI())
	if _, err := c.Database("probe").Collection("c").InsertOne(t.Context(), map[string]int{"n": 1}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if entries, err := os.ReadDir(srv.Dir()); err != nil || len(entries) == 0 {
		t.Errorf("no state written under %s (%v)", srv.Dir(), err)
	}
}

package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FilesHolding says which files under dir hold any of needles in their
// bytes ("name holds \"needle\""), for the tests that a value is gone from
// a store's data directory (an erasure, a re-scrub).
func FilesHolding(t testing.TB, dir string, needles ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(data, []byte(n)) {
				found = append(found, fmt.Sprintf("%s holds %q", filepath.Base(path), n))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return found
}

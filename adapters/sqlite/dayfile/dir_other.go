//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package dayfile

import (
	"errors"
	"os"
)

// errUnsupported: the directory lock and the free-space check are written for
// Linux and the BSDs (flock, statfs) only; elsewhere the store does not open.
var errUnsupported = errors.New("the sqlite store runs on Linux, macOS and the BSDs only")

func lockFile(*os.File) error { return errUnsupported }

func freeBytes(string) (int64, error) { return 0, errUnsupported }

func fileIDOf(os.FileInfo) (fileID, bool) { return fileID{}, false }

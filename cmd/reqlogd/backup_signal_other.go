//go:build !unix

package main

import "os"

// backupSignal: none where there is no SIGUSR1; reqlogd backup still works.
var backupSignal os.Signal

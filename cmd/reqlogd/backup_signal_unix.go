//go:build unix

package main

import (
	"os"
	"syscall"
)

// backupSignal makes a running reqlogd back up its data directory
// (backupOnSignal).
var backupSignal os.Signal = syscall.SIGUSR1

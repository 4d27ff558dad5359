//go:build !linux

package elastictest

import (
	"errors"
	"syscall"
)

// Starting a node is implemented for Linux only (process groups, parent-death
// signal, user namespaces); elsewhere use REQLOG_TEST_ELASTICSEARCH_URL.
func platformSupported() error {
	return errors.New("starting Elasticsearch is implemented for Linux only")
}

func sysProcAttr(runMode) *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) {}

func groupAlive(int) bool { return false }

func lockPath(string) (func(), error) { return nil, platformSupported() }

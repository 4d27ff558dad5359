package elastictest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

func platformSupported() error { return nil }

func sysProcAttr(m runMode) *syscall.SysProcAttr {
	// Own process group so Stop can signal the launcher and the server JVM
	// it forks; SIGKILL the launcher if the test binary dies (the server
	// then exits too: it shuts down when the launcher's pipe to it closes).
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch m {
	case runUserNS:
		a.Cloneflags = syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: nsUID, HostID: 0, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: nsUID, HostID: 0, Size: 1}}
	case runNobody:
		a.Credential = &syscall.Credential{Uid: nobodyID, Gid: nobodyID}
	}
	return a
}

func signalGroup(pgid int, sig syscall.Signal) { syscall.Kill(-pgid, sig) }

// groupAlive reports whether a process of group pgid is still running.
// Zombies do not count: a server JVM orphaned by a killed launcher waits
// for init to reap it, which some container inits never do.
func groupAlive(pgid int) bool {
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range entries {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}

// lockPath takes an exclusive lock on path, waiting for other processes.
func lockPath(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

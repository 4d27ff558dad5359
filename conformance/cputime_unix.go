//go:build unix

package conformance

import "syscall"

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds: what a benchmark costs on a machine others share, where wall
// time also counts waiting for a core.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

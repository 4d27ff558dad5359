package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture the tool runs on.
const userHZ = 100

// processCPU reads the CPU time (user and system, every thread) that process pid
// has used so far, from /proc/<pid>/stat (Linux).
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are counted after it.
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	// fields[0] is the state, field 3 of proc(5); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// cpuMeter measures the CPU a process spends between start and its stop
// function. A meter of pid 0, or of a process whose /proc the tool cannot read,
// measures nothing.
type cpuMeter struct {
	pid    int
	before time.Duration
	ok     bool
	// waitedBefore is the process's run-queue wait at start, and waitOK
	// whether it could be read.
	waitedBefore time.Duration
	waitOK       bool
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	if pid > 0 {
		var err error
		m.before, err = processCPU(pid)
		m.ok = err == nil
		m.waitedBefore, err = runQueueWait(pid)
		m.waitOK = err == nil
	}
	return m
}

// waitedPer is the time the process's threads spent runnable but waiting for
// a CPU since start, divided by n; 0 when unknown. On a shared machine it
// tells a latency that is the machine's from one that is the server's.
func (m *cpuMeter) waitedPer(n float64) time.Duration {
	if !m.waitOK || n <= 0 {
		return 0
	}
	after, err := runQueueWait(m.pid)
	if err != nil {
		return 0
	}
	return time.Duration(float64(after-m.waitedBefore) / n)
}

// runQueueWait is the time the threads of process pid have spent waiting on
// a run queue so far: the second field of /proc/<pid>/task/*/schedstat
// (Linux with schedstats). A thread that ended meanwhile takes its share
// with it.
func runQueueWait(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, task := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(raw))
		if len(fields) < 2 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %q", pid, task.Name(), raw)
		}
		waited, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, task.Name(), err)
		}
		total += waited
	}
	return time.Duration(total), nil
}

// per is the CPU spent since start divided by n (messages or requests); 0 when unknown.
func (m *cpuMeter) per(n float64) time.Duration {
	if !m.ok || n <= 0 {
		return 0
	}
	after, err := processCPU(m.pid)
	if err != nil {
		return 0
	}
	return time.Duration(float64(after-m.before) / n)
}

// printCPU writes a process's CPU per acknowledged message, if measured.
func printCPU(w io.Writer, who string, perMessage time.Duration) {
	if perMessage > 0 {
		fmt.Fprintf(w, "cpu: %s spent %.1fµs per message (user and system, /proc/<pid>/stat)\n", who,
			float64(perMessage)/float64(time.Microsecond))
	}
}

// startCPUProfile writes the tool's own CPU profile to path until the
// returned func is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

//go:build !unix

package memory_test

// processCPU is unknown here: benchmarks report 0 CPU.
func processCPU() int64 { return 0 }

//go:build !unix

package conformance

// processCPU is not measured here: the benchmarks' CPU figures read 0.
func processCPU() int64 { return 0 }

//go:build race

package domain

// raceEnabled: the race detector makes sync.Pool drop items at random, so tests
// that count what pooling saves cannot run under it.
const raceEnabled = true

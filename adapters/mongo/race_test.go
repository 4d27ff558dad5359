//go:build race

package mongo_test

// raceEnabled: the race detector slows FerretDB, embedded in the test
// process, five to ten times.
const raceEnabled = true

//go:build !race

package mongo_test

const raceEnabled = false

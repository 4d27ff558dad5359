package app

import (
	"time"

	"github.com/reqlog/reqlog/ports"
)

// SystemClock is the wall clock; tests substitute a fake ports.Clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

var _ ports.Clock = SystemClock{}

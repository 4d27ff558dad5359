package domain

import "time"

// TimeLayout is the wire form of every timestamp: UTC with exactly six fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Micro normalises t to the precision every store keeps: UTC, whole microseconds.
func Micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

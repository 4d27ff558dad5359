package otlp

// CountMessages and CountObjects are the pre-decoding counts, for tests.
var (
	CountMessages = countMessages
	CountObjects  = countObjects
)

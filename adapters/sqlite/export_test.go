package sqlite

// SetIndexWords turns the word index on or off for a benchmark that prices
// it, and returns what restores it.
func SetIndexWords(on bool) (restore func()) {
	was := indexWords
	indexWords = on
	return func() { indexWords = was }
}

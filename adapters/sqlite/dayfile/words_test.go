package dayfile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/domain"
)

// A message's tokens are each distinct word's token once, whatever the
// repeats, the case and how many words there are (the set grows past its
// first table and is emptied between messages): the tokens a q of the
// same words looks up.
func TestWordTokensAreEachWordOnce(t *testing.T) {
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "w%d W%d ", i%3000, i%3000)
	}
	messages := []domain.Message{
		{Path: "/orders/ord_zq7x3k9w", Request: domain.Content{Header: domain.Header{"Accept": {"application/json"}}, Body: "Hello hello HELLO wörld"}},
		{Path: "/bulk", Response: domain.Content{Body: many.String()}},
		{Path: "/"},
		{Path: "/x", Request: domain.Content{Body: "Ünïcode ünÏCODE 東京 東京"}},
	}
	var words wordTokens
	for _, m := range messages {
		var texts []string
		domain.SearchedTexts(m, func(text string) bool {
			texts = append(texts, text)
			return true
		})
		want, _ := Words(strings.Join(texts, " "))
		got := string(words.of(m))
		if !slices.Equal(sortedFields(got), sortedFields(want)) {
			t.Errorf("path %s: tokens\n%s\nwant (in any order)\n%s", m.Path, got, want)
		}
	}
}

func sortedFields(s string) []string {
	f := strings.Fields(s)
	slices.Sort(f)
	return f
}

// A word whose hash is 0 (held beside the table, 0 marking a free slot) is
// written once too.
func TestWordTokensHoldTheZeroHash(t *testing.T) {
	var words wordTokens
	words.reset()
	for _, h := range []uint64{0, 256, 0, 256, 512} {
		words.add(h)
	}
	if got, want := string(words.tokens), "aaaaaaaa aaaaaaia aaaaaaqa"; got != want {
		t.Errorf("tokens %q, want %q", got, want)
	}
}

// The ASCII pass splits and hashes as the UAX #29 segmenter and wordHash do:
// random texts of letters, digits, every mark that joins or breaks a word,
// and now and then a rune past ASCII (a letter, a mark the segmenter
// ignores inside a word, a quote that joins) that hands the text to the
// segmenter.
func TestASCIIWordsAreUAX29s(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 2))
	parts := []string{"a", "Z", "k", "0", "7", "_", ":", ".", "'", ",", ";", " ", "-", "\"", "/", "@", "\r\n", "\t", "=", "?", "&", "{", "}"}
	beyond := []string{"é", "\u0301", "\u00ad", "\u2019", "東", "\u200d", "\ufeff"}
	var words wordTokens
	for round := range 20000 {
		var text strings.Builder
		for range 1 + rng.IntN(24) {
			if rng.IntN(60) == 0 {
				text.WriteString(beyond[rng.IntN(len(beyond))])
				continue
			}
			text.WriteString(parts[rng.IntN(len(parts))])
		}
		m := domain.Message{Path: text.String()}
		want, _ := Words(m.Path)
		if got := string(words.of(m)); !slices.Equal(sortedFields(got), sortedFields(want)) {
			t.Fatalf("round %d: %q: tokens %s, want %s", round, m.Path, got, want)
		}
	}
}

package sqlite

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/words"

	"github.com/reqlog/reqlog/domain"
)

// The word index holds each word of a message's searched texts as a short
// ASCII token: 50 bits of a 64-bit FNV-1a hash of the word in lower case, in
// ten base32 letters. FTS5's own tokenizer ("ascii") then sees one token per
// word whatever the word's script or punctuation, so UAX #29 alone decides
// what a word is, case is folded exactly as domain.Search folds it, and
// accents are kept. Two words sharing a token (one pair in 2^50) only add a
// candidate, which List and Stats verify with domain.Search anyway.
const (
	tokenLetters = 10
	tokenBits    = 5 * tokenLetters
	base32Lower  = "abcdefghijklmnopqrstuvwxyz234567"
)

// isWord reports whether a UAX #29 segment is a word to index: it holds a
// letter or a number (spaces and punctuation segments are not).
func isWord(segment string) bool {
	for _, r := range segment {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				return true
			}
			continue
		}
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			return true
		}
	}
	return false
}

// appendToken appends the token of word, lower-cased rune by rune as
// strings.ToLower does (an invalid byte reads as U+FFFD).
func appendToken(dst []byte, word string) []byte {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(word); {
		c := word[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			h = (h ^ uint64(c)) * prime
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(word[i:])
		i += width
		for _, b := range buf[:utf8.EncodeRune(buf[:], unicode.ToLower(r))] {
			h = (h ^ uint64(b)) * prime
		}
	}
	h >>= 64 - tokenBits
	for shift := tokenBits - 5; shift >= 0; shift -= 5 {
		dst = append(dst, base32Lower[(h>>shift)&31])
	}
	return dst
}

// appendTextTokens appends the tokens of text's words, each followed by a space.
func appendTextTokens(dst []byte, text string) []byte {
	it := words.FromString(text)
	for it.Next() {
		if w := it.Value(); isWord(w) {
			dst = append(appendToken(dst, w), ' ')
		}
	}
	return dst
}

// messageTokens is what the word index holds of m: the tokens of its path,
// of the first domain.SearchedBodyBytes of each body and of every header
// value, in that order.
func messageTokens(dst []byte, m domain.Message) []byte {
	domain.SearchedTexts(m, func(text string) bool {
		dst = appendTextTokens(dst, searchedPrefix(text))
		return true
	})
	return dst
}

// searchedPrefix is the part of a text the index holds: the first
// domain.SearchedBodyBytes, cut back to a rune boundary. Only bodies can be
// longer; paths and header values are far shorter.
func searchedPrefix(text string) string {
	if len(text) <= domain.SearchedBodyBytes {
		return text
	}
	cut := domain.SearchedBodyBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// phraseQuery is the FTS5 query of q: its words' tokens as one phrase, and
// false when q has no word (the domain refuses such a q).
func phraseQuery(q string) (string, bool) {
	tokens := strings.TrimSpace(string(appendTextTokens(nil, q)))
	if tokens == "" {
		return "", false
	}
	return `"` + tokens + `"`, true
}

package dayfile

import (
	"context"
	"database/sql"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/bits-and-blooms/bitset"
	"github.com/clipperhouse/uax29/v2/words"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// The word index holds each distinct word of a message's searched texts as a
// short ASCII token: 40 bits of a 64-bit FNV-1a hash of the word in lower
// case, in eight base32 letters. FTS5's own tokenizer ("ascii") then sees one
// token per word whatever the word's script or punctuation, so UAX #29 alone
// decides what a word is, case is folded exactly as domain.Search folds it,
// and accents are kept. The index keeps no positions (detail=none) and each
// word once per message: a q finds the messages holding all its words, and
// List and Stats check each with domain.Search, which decides the phrase and
// also rules out two words sharing a token (one pair in 2^40).
const (
	tokenLetters = 8
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

// wordHash is the token's bits of word, lower-cased rune by rune as
// strings.ToLower does (an invalid byte reads as U+FFFD).
func wordHash(word string) uint64 {
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
	return h >> (64 - tokenBits)
}

// appendToken appends the eight letters of a word's hash.
func appendToken(dst []byte, h uint64) []byte {
	for shift := tokenBits - 5; shift >= 0; shift -= 5 {
		dst = append(dst, base32Lower[(h>>shift)&31])
	}
	return dst
}

// appendWordHashes appends the hashes of text's words.
func appendWordHashes(dst []uint64, text string) []uint64 {
	it := words.FromString(text)
	for it.Next() {
		if w := it.Value(); isWord(w) {
			dst = append(dst, wordHash(w))
		}
	}
	return dst
}

// distinctTokens appends the tokens of hashes, each once, separated by
// spaces; it sorts hashes.
func distinctTokens(dst []byte, hashes []uint64) []byte {
	slices.Sort(hashes)
	for i, h := range hashes {
		if i > 0 && h == hashes[i-1] {
			continue
		}
		if len(dst) > 0 {
			dst = append(dst, ' ')
		}
		dst = appendToken(dst, h)
	}
	return dst
}

// wordTokens makes what the word index holds of a message, reusing its
// memory from one message to the next: a set of the words' hashes, so that
// each word is hashed once and its token written the first time it is met
// (sorting every word's hash to drop repeats was a third of the Go side of
// indexing: docs/benchmarks.md, "A cheaper word index"). The zero value is
// ready to use.
type wordTokens struct {
	tokens []byte
	// slots is an open-addressing set of hashes, a power of two long and at
	// most half full; a hash of 0 is held by zero instead (0 marks a free
	// slot).
	slots []uint64
	held  int
	zero  bool
}

// of returns the tokens of the words of m's path, of the first
// domain.SearchedBodyBytes of each body and of every header value, each
// once, separated by spaces, in the order first met. The slice is valid
// until the next call.
func (t *wordTokens) of(m domain.Message) []byte {
	t.reset()
	domain.SearchedTexts(m, func(text string) bool {
		text = searchedPrefix(text)
		if !t.addASCII(text) {
			it := words.FromString(text)
			for it.Next() {
				if w := it.Value(); isWord(w) {
					t.add(wordHash(w))
				}
			}
		}
		return true
	})
	return t.tokens
}

// The classes of ASCII bytes that UAX #29 tells apart inside a word:
// letters, digits, the underscore (ExtendNumLet: it joins either), and the
// marks that join two letters (MidLetter ':', MidNumLetQ '.' and the
// apostrophe) or two digits (MidNum ',' ';', MidNumLetQ). Every other byte
// ends a word.
const (
	asciiOther byte = iota
	asciiLetter
	asciiDigit
	asciiUnderscore
	asciiMidLetter // ':'
	asciiMidNum    // ',' ';'
	asciiMidBoth   // '.' and the apostrophe
)

var asciiClass = func() (c [utf8.RuneSelf]byte) {
	for b := 'a'; b <= 'z'; b++ {
		c[b], c[b-'a'+'A'] = asciiLetter, asciiLetter
	}
	for b := '0'; b <= '9'; b++ {
		c[b] = asciiDigit
	}
	c['_'], c[':'], c[','], c[';'], c['.'], c['\''] = asciiUnderscore, asciiMidLetter, asciiMidNum, asciiMidNum, asciiMidBoth, asciiMidBoth
	return c
}()

// addASCII adds the words of text, when it is ASCII, splitting and hashing
// each in one pass as UAX #29 and wordHash would (TestASCIIWordsAreUAX29s
// checks it against the segmenter), and reports true; at the first byte
// past ASCII it reports false and text is read by the segmenter (the words
// added so far are in the set already). The segmenter took half of the Go
// side of indexing.
func (t *wordTokens) addASCII(text string) bool {
	const offset, prime = 14695981039346656037, 1099511628211
	for i := 0; i < len(text); {
		c := text[i]
		if c >= utf8.RuneSelf {
			return false
		}
		class := asciiClass[c]
		if class == asciiOther || class >= asciiMidLetter {
			i++
			continue
		}
		h, alnum, last := uint64(offset), false, class
		for i < len(text) {
			c = text[i]
			if c >= utf8.RuneSelf {
				return false
			}
			class = asciiClass[c]
			if class >= asciiMidLetter { // joins two letters or two digits (WB6, WB7, WB11, WB12)
				if i+1 < len(text) && text[i+1] >= utf8.RuneSelf {
					return false // joined or not as the rune after it says
				}
				if i+1 == len(text) {
					break
				}
				next := asciiClass[text[i+1]]
				joins := last == asciiLetter && next == asciiLetter && class != asciiMidNum ||
					last == asciiDigit && next == asciiDigit && class != asciiMidLetter
				if !joins {
					break
				}
				h = (h ^ uint64(c)) * prime
				i++
				continue
			}
			if class == asciiOther {
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			h = (h ^ uint64(c)) * prime
			alnum = alnum || class != asciiUnderscore
			last = class
			i++
		}
		if alnum {
			t.add(h >> (64 - tokenBits))
		}
	}
	return true
}

// reset empties the set, shrinking a table a long message grew.
func (t *wordTokens) reset() {
	t.tokens, t.held, t.zero = t.tokens[:0], 0, false
	if len(t.slots) > 1<<12 {
		t.slots = nil
		return
	}
	clear(t.slots)
}

// add writes h's token unless the set holds h.
func (t *wordTokens) add(h uint64) {
	if h == 0 {
		if t.zero {
			return
		}
		t.zero = true
	} else {
		if 2*(t.held+1) > len(t.slots) {
			t.grow()
		}
		mask := uint64(len(t.slots) - 1)
		i := h & mask // the hash's low bits are as random as any
		for t.slots[i] != 0 {
			if t.slots[i] == h {
				return
			}
			i = (i + 1) & mask
		}
		t.slots[i] = h
		t.held++
	}
	if len(t.tokens) > 0 {
		t.tokens = append(t.tokens, ' ')
	}
	t.tokens = appendToken(t.tokens, h)
}

// grow doubles the table (256 slots at first) and puts the hashes back.
func (t *wordTokens) grow() {
	old := t.slots
	t.slots = make([]uint64, max(2*len(old), 256))
	mask := uint64(len(t.slots) - 1)
	for _, h := range old {
		if h == 0 {
			continue
		}
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h
	}
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

// Words returns the FTS5 query of q, all its words' tokens (FTS5 reads
// tokens side by side as AND), "" when q has no word (the domain refuses
// such a q); and whether q is one word (isOneWord).
func Words(q string) (tokens string, oneWord bool) {
	tokens = string(distinctTokens(nil, appendWordHashes(nil, q)))
	return tokens, tokens != "" && isOneWord(q)
}

// isOneWord reports whether q is a single UAX #29 word and nothing else. A
// message whose words hold it holds q as a substring bounded by words, which
// the contract says MUST match; so does no message whose words lack it (q's
// words do not occur in it), which MUST NOT. The word index alone answers
// such a q, except for two words sharing a token: a message holding another
// word of q's token would be counted too. Its ~300 distinct words each match
// a given token with odds 2^-40, so over a million messages a q counts a
// wrong one with odds under 1 in 3,600 (and only a message of the caller's
// own scope and filters).
func isOneWord(q string) bool {
	it := words.FromString(q)
	return it.Next() && isWord(it.Value()) && !it.Next()
}

// ByWords narrows w to the file's messages whose words hold all of words'
// tokens when they are few (at most limit): read them by seq (NOT INDEXED),
// or SQLite's planner walks the whole scope to test each. none reports that
// no message holds them.
func (f *File) ByWords(ctx context.Context, words string, w *Where, limit int) (few, none bool, err error) {
	seqs, few, err := wordCandidates(ctx, f.Read, words, limit)
	if err != nil || !few {
		return false, false, err
	}
	if len(seqs) == 0 {
		return true, true, nil
	}
	w.AddSeqs(seqs)
	return true, false, nil
}

// wordCandidates returns the seqs of the messages whose words hold words'
// tokens, and true, when they are at most limit; otherwise false.
func wordCandidates(ctx context.Context, db *sql.DB, words string, limit int) ([]int64, bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT rowid FROM words WHERE words MATCH ? LIMIT ?`, words, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	seqs := []int64{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, false, err
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return seqs, len(seqs) <= limit, nil
}

// Held is what a day file's word index says of the messages holding a q's
// words (File.Held).
type Held struct {
	// None: no message holds them. Few: at most the limit do, and the where
	// is narrowed to them.
	None, Few bool
	// Otherwise: the seqs of all of them, and the file's last seq (about
	// how many messages it holds).
	Seqs    *bitset.BitSet
	LastSeq int64
}

// Held reads the messages holding words' tokens: narrows w to them when they
// are few (at most limit, as ByWords), or returns all their seqs.
func (f *File) Held(ctx context.Context, words string, w *Where, limit int) (Held, error) {
	var held Held
	var err error
	if held.Few, held.None, err = f.ByWords(ctx, words, w, limit); err != nil || held.Few {
		return held, err
	}
	if err := f.Read.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM messages`).Scan(&held.LastSeq); err != nil {
		return held, err
	}
	held.Seqs, err = sqlitedb.IntSet(ctx, f.Read, `SELECT rowid FROM words WHERE words MATCH ?`, words)
	return held, err
}

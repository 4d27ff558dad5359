package domain

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSearchIn(t *testing.T) {
	cases := []struct {
		q, text string
		want    bool
	}{
		// Words and case.
		{"ord_8f7d", `{"order":"ord_8f7d"}`, true},
		{"ORD_8F7D", `{"order":"ord_8f7d"}`, true},
		{"ord_8f7d", `{"order":"ORD_8F7D"}`, true},
		{"8f7d", `{"order":"ord_8f7d"}`, true}, // a substring store finds inside words
		{"ord_8f7e", `{"order":"ord_8f7d"}`, false},
		{"payment declined", "Payment declined: card expired", true},
		{"declined payment", "Payment declined: card expired", false},
		// Edges of the text.
		{"abc", "abcdef", true},
		{"def", "abcdef", true},
		{"abcdef", "abcdef", true},
		{"abcdefg", "abcdef", false},
		{"a", "", false},
		{"x", "x", true},
		{"x", "X", true},
		// The anchor (the rarest byte) first, last, repeated, cut off by the edges.
		{"zab", "xxzab", true},
		{"zab", "zzzzzab", true},
		{"zab", "za", false},
		{"abz", "abz", true},
		{"abz", "bz", false},
		{"abz", "ABZ", true},
		{"abz", "xabZ", true},
		{"qa", "q", false},
		{"qqa", "qqqqqqA", true},
		{"zoo", "zOo", true},
		{"7", "abc7", true},
		// Not ASCII: rune by rune, lower case on both sides.
		{"Zürich", "ZÜRICH", true},
		{"zürich", `{"city":"Zürich"}`, true},
		{"ZÜRICH", "zürich", true},
		{"café", "CAFÉ AU LAIT", true},
		{"cafe", "café", false},
		{"café", "cafe", false},
		{"ü", "Ü", true},
		{"é", "é", true},
		{"aé", "xAé", true},
		{"éa", "xÉA", true},
		{"éa", "é", false},
		{"xé", "é", false},
		{"éé", "éÉé", true},
		{"straße", "STRASSE", false},
		{"\u212Aelvin", "kelvin", true}, // the Kelvin sign's lower case is k
		{"\u212Aelvin", "KELVIN", true},
		{"k\u00e9", "\u212A\u00c9", true},
		{"K", "\u212A", false}, // an ASCII q ignores ASCII case only (documented)
		{"日本", "東京と日本語", true},
		{"日本語", "日本", false},
		// Invalid UTF-8 in the text, or in q.
		{"é", "\xff\xc3\xa9", true},
		{"aé", "a\xffé", false},
		{"\xff", "a\xfeb", true}, // both are U+FFFD to strings.ToLower
		{"\uFFFD", "\xff", true},
		{"\uFFFDx", "é\xffX", true},
		// U+FFFD in q: found as itself and as any invalid byte, however it
		// is anchored, and never in a valid rune whose bytes are not.
		{"\uFFFDzz", "xx\uFFFDZZ", true},
		{"\uFFFDzz", "xx\xc3ZZ", true},       // a lead byte without its continuation
		{"\uFFFDzz", "xx\xc3\xa9zz", false},  // é, valid
		{"\uFFFD\uFFFDz", "\xe6\x97z", true}, // an incomplete rune: two invalid bytes
		{"\uFFFDz", "\xe6\x97\xa5z", false},  // 日, complete
		{"e\uFFFD", "E\xa9", true},           // a continuation byte alone
		{"e\uFFFD", "é", false},
		{"st\uFFFDtus", "ST\x80TUS", true},
		{"st\uFFFDtus", "st\uFFFDtus", true},
		{"st\uFFFDtus", "status", false},
		{"\uFFFD", "plain", false},
		{"\uFFFD", "naïve", false},
		{"\uFFFDa", "\uFFFD\xffA", true},
		// Runes whose lower case is ASCII or changes length in UTF-8, and
		// combining marks.
		{"İstanbul", "istanbul", true},
		{"İstanbul", "İSTANBUL", true},
		{"istanbul", "İstanbul", false}, // ASCII q: ASCII case only
		{"STRAẞE", "straße", true},
		{"straße", "STRAẞE", true},
		{"e\u0301", "CAFE\u0301", true},
		{"e\u0301", "café", false}, // é precomposed is another rune
		{"日本語", "東京の日本語", true},
		// A q whose lower case is ASCII, in texts with and without the runes
		// beyond ASCII that lower to its runes.
		{"\u212Aelvin", "\u212AELVIN", true},
		{"\u212Aelvin", "İ kelvin", true},
		{"\u212Aelvin", "İ kelvi", false},
		{"İİ", "xİi", true},
		{"İİ", "xİ\u0130", true},
		{"İİ", "İ I", false},
	}
	for _, c := range cases {
		if got := NewSearch(c.q).In(c.text); got != c.want {
			t.Errorf("NewSearch(%q).In(%q) = %v, want %v", c.q, c.text, got, c.want)
		}
	}
}

func TestSearchAnchor(t *testing.T) {
	// '7' is the rarest byte of ord_8f7d by byteRank.
	if s := NewSearch("ORD_8F7D"); s.anchor != '7' || s.anchorAt != 6 || s.anchorUpper != '7' {
		t.Errorf(`NewSearch("ORD_8F7D") anchors on %q at %d (upper %q), want '7' at 6`, s.anchor, s.anchorAt, s.anchorUpper)
	}
	if s := NewSearch("xkq"); s.anchor != 'q' || s.anchorAt != 2 || s.anchorUpper != 'Q' {
		t.Errorf(`NewSearch("xkq") anchors on %q at %d (upper %q), want 'q' at 2, 'Q'`, s.anchor, s.anchorAt, s.anchorUpper)
	}
	// Not ASCII: a non-ASCII rune, found in each of its cases.
	s := NewSearch("Zürich")
	if s.runes[s.anchorRune] != 'ü' || !slices.Equal(s.anchorForms, []string{"ü", "Ü"}) {
		t.Errorf(`NewSearch("Zürich") anchors on %q with forms %q, want 'ü' with ü and Ü`, s.runes[s.anchorRune], s.anchorForms)
	}
	if got := runesLoweringTo('k'); !slices.Equal(got, []rune{'k', 'K', '\u212A'}) {
		t.Errorf("runesLoweringTo('k') = %q, want k, K and the Kelvin sign", got)
	}
	for _, lower := range []rune{'a', 'é', 'ω', 'i', 'ß', '日'} {
		for _, r := range runesLoweringTo(lower) {
			if unicode.ToLower(r) != lower {
				t.Errorf("runesLoweringTo(%q) lists %q, whose lower case is %q", lower, r, unicode.ToLower(r))
			}
		}
	}
	// U+FFFD is an anchor of its own (invalid bytes are found by walking the
	// text), after any other rune beyond ASCII.
	for q, want := range map[string]rune{"a\uFFFD": utf8.RuneError, "\uFFFDé": 'é', "\xffz": utf8.RuneError, "aé\uFFFD": 'é'} {
		if s := NewSearch(q); s.runes[s.anchorRune] != want {
			t.Errorf("NewSearch(%q) anchors on %q, want %q", q, s.runes[s.anchorRune], want)
		}
	}
}

// No rune has more forms (runes lowering to it) than a scan keeps track of.
func TestRunesLoweringTo(t *testing.T) {
	most := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if n := len(runesLoweringTo(unicode.ToLower(r))); n > most {
			most = n
		}
	}
	if most != maxForms {
		t.Errorf("a rune has up to %d forms, want maxForms = %d", most, maxForms)
	}
}

// Matching allocates nothing, whatever q.
func TestSearchInAllocatesNothing(t *testing.T) {
	text := strings.Repeat(`{"id":"ord_0001234","city":"Zürich","note":"\uFFFD"} `, 20)
	for _, q := range []string{"ord_9", "zürich!", "\uFFFDzz", "İstanbul", "\u212Aelvin", "日本"} {
		s := NewSearch(q)
		if n := testing.AllocsPerRun(10, func() { s.In(text); s.CouldBeIn(text) }); n != 0 {
			t.Errorf("NewSearch(%q).In allocates %v times", q, n)
		}
	}
}

func TestSearchMatchesSearchedTexts(t *testing.T) {
	m := Message{
		Path:     "/v1/orders?ref=inv_20931",
		Request:  Content{Body: `{"customer":"cus_q81xv"}`, Header: Header{"X-Tenant": {"eu-west", "blue-heron-17"}}},
		Response: Content{Body: `{"order":"ord_8f7d"}`, Header: Header{"X-Cache-Key": {"sunny-otter-42"}}},
	}
	for q, want := range map[string]bool{
		"inv_20931": true, "cus_Q81XV": true, "ord_8f7d": true, "blue-heron-17": true, "sunny-otter-42": true,
		"x-tenant": false, "Cache-Key": false, "nowhere": false, "": true,
	} {
		if got := NewSearch(q).Matches(m); got != want {
			t.Errorf("NewSearch(%q).Matches = %v, want %v", q, got, want)
		}
	}
	var texts []string
	SearchedTexts(m, func(s string) bool { texts = append(texts, s); return len(texts) < 2 })
	if len(texts) != 2 {
		t.Errorf("SearchedTexts went on after yield returned false: %q", texts)
	}
}

// asciiLowerOf reports whether text holds a rune beyond ASCII whose lower case
// is ASCII (the Kelvin sign, İ): there an ASCII q differs from the oracle by
// design.
func asciiLowerOf(text string) bool {
	return strings.ContainsFunc(text, func(r rune) bool { return r >= utf8.RuneSelf && unicode.ToLower(r) < utf8.RuneSelf })
}

// FuzzSearch checks Search.In against the plain definition it optimises:
// strings.Contains over both texts lowered by strings.ToLower.
func FuzzSearch(f *testing.F) {
	for _, seed := range [][2]string{
		{"ord_8f7d", `{"order":"ORD_8F7D"}`}, {"zab", "zzzab"}, {"abz", "bz"}, {"Zürich", "ZÜRICH"},
		{"éa", "xÉA"}, {"\u212Aelvin", "KELVIN"}, {"é", "\xff\xc3\xa9"}, {"\xff", "a\xfeb"}, {"q", ""},
		{"ǅ", "ǆ ǅ Ǆ"}, {"İ", "i̇"}, {"ß", "SS"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, q, text string) {
		s := NewSearch(q)
		if s.ascii && asciiLowerOf(text) {
			t.Skip("an ASCII q ignores only ASCII case")
		}
		want := strings.Contains(strings.ToLower(text), strings.ToLower(q))
		if got := s.In(text); got != want {
			t.Errorf("NewSearch(%q).In(%q) = %v, want %v", q, text, got, want)
		}
	})
}

// FuzzSearchCouldBeIn checks the whole-record check against the definition:
// a text that holds q, with any bytes around it, is never ruled out.
func FuzzSearchCouldBeIn(f *testing.F) {
	for _, seed := range [][4]string{
		{"ord_8f7d", "x", `{"order":"ORD_8F7D"}`, "y"}, {"\uFFFDzz", "\xe6", "\x97zz", ""},
		{"zz\uFFFD", "", "zz\xe6", "\x97\xa5"}, {"\uFFFD", "\xc3", "\xa9", ""}, {"a\uFFFDb", "\xe6", "a\x97b", "\xa5"},
		{"\u212Aelvin", "", "\u212AELVIN", ""}, {"\uFFFD\u212A", "\xc3", "\xa9\u212A", ""}, {"İstanbul", "\xc4", "İSTANBUL", "\xb0"},
		// Found by the fuzzer in mutants: the last candidates of a run of
		// bytes at or above 0x80.
		{"A\xbd", "0", "A\x97", "0"}, {"\xe9A\xbdA", "0", "\x97A\x97A", "0"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, q, before, text, after string) {
		s := NewSearch(q)
		holds := strings.Contains(strings.ToLower(text), strings.ToLower(q))
		if s.ascii {
			holds = s.In(text) // an ASCII q ignores only ASCII case (FuzzSearch)
		}
		if holds && !s.CouldBeIn(before+text+after) {
			t.Errorf("NewSearch(%q) finds it in %q, but CouldBeIn(%q) rules it out", q, text, before+text+after)
		}
	})
}

func BenchmarkSearchIn(b *testing.B) {
	logged := strings.Repeat(`{"id":"ord_0001234","status":"shipped","total":{"amount":125,"currency":"EUR"}} `, 50)
	for _, c := range []struct{ name, q, text string }{
		{"ASCII", "ord_needle", logged},
		{"ASCII upper", "ORD_NEEDLE", logged},
		{"non-ASCII", "Zürich", logged},
		{"non-ASCII phrase", "café au lait", logged},
		// Every byte a failing candidate, in the case other than q's: the scan
		// must stay linear (it once searched the rest of the text each time).
		{"ASCII every byte an anchor", "zab", strings.Repeat("Z", 64<<10)},
		{"non-ASCII every rune an anchor", "zéb", strings.Repeat("ZÉ", 32<<10)},
	} {
		s := NewSearch(c.q)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				if s.In(c.text) {
					b.Fatal("found")
				}
			}
		})
	}
}

// indexHigh against the simplest scans doing its job, on logged ASCII text:
// what its word-at-a-time loop buys.
//
//	go test ./domain -run '^$' -bench IndexHigh
func BenchmarkIndexHigh(b *testing.B) {
	logged := strings.Repeat(`{"id":"ord_0001234","status":"shipped","total":{"amount":125,"currency":"EUR"}} `, 25)
	header := "i0l6hrwYayPL9hJ7kwKs0AsLsV3DiWiNwAYRdI"
	scans := []struct {
		name string
		scan func(string) int
	}{
		{"indexHigh", indexHigh},
		{"byte loop", func(s string) int {
			for i := 0; i < len(s); i++ {
				if s[i] >= utf8.RuneSelf {
					return i
				}
			}
			return -1
		}},
		{"strings.IndexFunc", func(s string) int {
			return strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
		}},
	}
	for _, text := range []struct{ name, s string }{{"2 KB body", logged}, {"header value", header}} {
		for _, sc := range scans {
			b.Run(text.name+"/"+sc.name, func(b *testing.B) {
				b.SetBytes(int64(len(text.s)))
				for b.Loop() {
					if sc.scan(text.s) >= 0 {
						b.Fatal("found")
					}
				}
			})
		}
	}
}

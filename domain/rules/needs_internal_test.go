package rules

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPatternNeedsHoldForEveryMatch checks that patternNeeds never asks a
// match for more than it holds, on random texts: the counts it gives only
// spare a pattern values it cannot match in. And it finds needs at all.
func TestPatternNeedsHoldForEveryMatch(t *testing.T) {
	patterns := []string{`\b\d{6,}\b`, `\bORD-\d{8}\b`, `(?i)passport[:= ]+([A-Z0-9]{6,9})`, `\d{4}-\d{2}-\d{2}`, `/users/(\d+)`,
		`A[B-D]{2}|x@y\.z|_Q`, `(?:AB|A_)+:?`, `[A-Z]{2}\d{2}(?: ?[A-Z0-9]){3,5}`, `(?i)k\.K`, `[0-9]*Z?`, `(X|Y)\d{1,3}@\.`, `[\-._:]{2}`,
		`\pN{3}`, `[A-Za-z]{4}`, `\x{212A}K`}
	r := rand.New(rand.NewPCG(37, 6))
	const alphabet = "0123456789ABCDKQXYZabkxz@._:-/= \u212a"
	runes := []rune(alphabet)
	found := 0
	for _, pattern := range patterns {
		re := regexp.MustCompile(pattern)
		needs := patternNeeds(pattern)
		if needs != (textCounts{}) {
			found++
		}
		for range 3000 {
			text := make([]rune, r.IntN(24))
			for i := range text {
				text[i] = runes[r.IntN(len(runes))]
			}
			value := string(text)
			for _, m := range re.FindAllStringIndex(value, -1) {
				if counts := countText(value[m[0]:m[1]]); !counts.covers(needs.packed()) {
					t.Fatalf("%s matches %q in %q, whose counts %+v fall short of its needs %+v", pattern, value[m[0]:m[1]], value, counts, needs)
				}
			}
		}
	}
	if want := (textCounts{digits: 8, upper: 3, dash: 1}); patternNeeds(`\bORD-\d{8}\b`) != want {
		t.Errorf("the needs of ORD-: %+v, want %+v", patternNeeds(`\bORD-\d{8}\b`), want)
	}
	if found < 8 {
		t.Errorf("needs found for %d patterns of %d", found, len(patterns))
	}
}

// TestContainsFoldAsEqualFoldAtEachByte compares containsFold with
// strings.EqualFold tried at each byte, on random texts.
func TestContainsFoldAsEqualFoldAtEachByte(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 7))
	runes := []rune("bBeErRaAxX ſK\u212a")
	for _, s := range []string{"bearer", "passport", "b", "Bx", "k"} {
		for range 5000 {
			text := make([]rune, r.IntN(20))
			for i := range text {
				text[i] = runes[r.IntN(len(runes))]
			}
			value := string(text)
			want := false
			for i := 0; i+len(s) <= len(value); i++ {
				if c := value[i]; (c|0x20 == s[0]|0x20) && strings.EqualFold(value[i:i+len(s)], s) {
					want = true
				}
			}
			if got := containsFold(value, s); got != want {
				t.Fatalf("containsFold(%q, %q) = %v, want %v", value, s, got, want)
			}
		}
	}
}

// TestHasIBANStartAsEveryPlace compares hasIBANStart, which skips places,
// with every place tried, on random texts.
func TestHasIBANStartAsEveryPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 8))
	const alphabet = "AZ09x- @[\x80\xc1\xda"
	for range 20000 {
		text := make([]byte, r.IntN([]int{16, 80}[r.IntN(2)]))
		for i := range text {
			text[i] = alphabet[r.IntN(len(alphabet))]
		}
		want := false
		for i := 0; i+3 < len(text); i++ {
			want = want || byteKind[text[i]] == kindUpper && byteKind[text[i+1]] == kindUpper && byteKind[text[i+2]] == kindDigit && byteKind[text[i+3]] == kindDigit
		}
		if got := hasIBANStart(string(text)); got != want {
			t.Fatalf("hasIBANStart(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestHintsLookingForARareByteAsContains compares the hints that look for a
// rare byte of a literal (hasBefore, hasGitHubStart) with strings.Contains
// of each literal, on random texts of the literals' pieces.
func TestHintsLookingForARareByteAsContains(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 12))
	pieces := []string{"g", "gh", "h", "p", "o", "u", "s", "r", "x", "_", "github", "pat", "ghp", "github_pa", "_pat_", "t_", "e", "ey", "y", "J", "eyJ", "E", "-", " "}
	containsAny := func(text string, literals ...string) bool {
		return slices.ContainsFunc(literals, func(l string) bool { return strings.Contains(text, l) })
	}
	for range 50000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		if got, want := hasGitHubStart(text), containsAny(text, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"); got != want {
			t.Fatalf("hasGitHubStart(%q) = %v, want %v", text, got, want)
		}
		if got, want := hasBefore('J', "ey")(text), strings.Contains(text, "eyJ"); got != want {
			t.Fatalf("hasBefore('J', \"ey\")(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestByteCountsAsCountsCapped compares countText with a count of each
// kind capped at 127, and covers with a comparison of each, on random texts
// short and long.
func TestByteCountsAsCountsCapped(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 10))
	const alphabet = "0123456789AZaz@.:-_ \t\n\r\f\v\xff"
	naive := func(s string) (n [countKinds]int) {
		for i := 0; i < len(s); i++ {
			n[byteKind[s[i]]]++
		}
		for k := range n {
			n[k] = min(n[k], 127)
		}
		return n
	}
	lanes := func(c byteCounts) (n [countKinds]int) {
		for k := 1; k < countKinds; k++ {
			n[k] = int(c >> (8 * (k - 1)) & 0xff)
		}
		return n
	}
	for range 5000 {
		text := make([]byte, r.IntN([]int{20, 300, 2000}[r.IntN(3)]))
		for i := range text {
			text[i] = alphabet[r.IntN(len(alphabet))]
		}
		want := naive(string(text))
		want[kindOther] = 0
		got := countText(string(text))
		if lanes(got) != want {
			t.Fatalf("countText(%q) = %v, want %v", text, lanes(got), want)
		}
		var need textCounts
		need.add(uint8(1+r.IntN(countKinds-1)), r.IntN(200))
		need.add(uint8(1+r.IntN(countKinds-1)), r.IntN(20))
		needLanes := lanes(need.packed())
		covers := true
		for k := 1; k < countKinds; k++ {
			covers = covers && want[k] >= needLanes[k]
		}
		if got.covers(need.packed()) != covers {
			t.Fatalf("%v covers %v: %v, want %v", want, needLanes, !covers, covers)
		}
	}
}

// TestShapesAsTheirPatterns compares each detector's shape (findShapes)
// with its pattern's FindAllStringIndex, on random texts of the bytes that
// make or break their matches, short and long.
func TestShapesAsTheirPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 13))
	const alphabet = "0123456789012345678901234567890123456789 -..x_é\n"
	for name, d := range detectors {
		if d.shapeAt == nil {
			continue
		}
		for range 30000 {
			text := make([]byte, r.IntN([]int{12, 30, 120}[r.IntN(3)]))
			for i := range text {
				text[i] = alphabet[r.IntN(len(alphabet))]
			}
			if got, want := findShapes(string(text), d.shapeAt), d.re.FindAllStringIndex(string(text), -1); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s in %q: the shape finds %v, the pattern %v", name, text, got, want)
			}
		}
	}
}

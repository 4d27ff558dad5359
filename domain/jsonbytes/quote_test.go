package jsonbytes

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// reference is what encoding/json writes for v with HTML escaping off.
func reference(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Every rune, every byte alone, every byte pair (which covers truncated and
// invalid UTF-8 sequences at any position) and longer invalid sequences quote as
// encoding/json quotes them.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	var runes strings.Builder
	for r := rune(0); r <= utf8.MaxRune; r++ {
		runes.WriteRune(r) // surrogates become U+FFFD, as any string may hold
	}
	var pairs strings.Builder
	for b := range 1 << 16 {
		pairs.WriteByte(byte(b >> 8))
		pairs.WriteByte(byte(b))
	}
	inputs := []string{runes.String(), pairs.String(), "", `quote " and backslash \`, "<script>&amp;</script>",
		"line\u2028separator\u2029paragraph", "\xe2\x80", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too big",
		"\xc0\xaf overlong", "\ufffd literal replacement"}
	for b := range 256 {
		inputs = append(inputs, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
		for at := range 17 { // every place in the 8-byte words AppendString tests at once
			inputs = append(inputs, strings.Repeat("x", at)+string([]byte{byte(b)})+strings.Repeat("y", 17-at))
		}
	}
	for _, s := range inputs {
		if got, want := AppendString(nil, s), reference(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q)\n got %q\nwant %q", s, got, want)
		}
	}
}

// Long strings, of every kind of byte at every density, appended after other
// bytes into buffers of every spare capacity, quote as encoding/json quotes
// them, and the bytes before the string and past the returned end are left as
// they were: AppendString stores whole words into the spare capacity.
func TestAppendStringLongStringsAndSpareCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 6))
	pieces := []string{`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "<", ">", "&", "/", "é", "日本", "\U0001F600",
		"\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "\ufffd", "plain", `{"k":"v"}`, " "}
	inputs := []string{
		strings.Repeat(`{"sku":"SKU-00042","name":"standard \"warehouse\" item"},`, 500),
		strings.Repeat("\x01", 10_000), // 6 bytes out for each byte in: the buffer grows mid-string
		strings.Repeat("\u2028", 3_000), strings.Repeat("\xff", 5_000), strings.Repeat("x", 100_003),
	}
	for range 2_000 {
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) == 0 {
				b.WriteString(strings.Repeat("a", rng.IntN(20)))
			}
		}
		inputs = append(inputs, b.String())
	}
	for _, s := range inputs {
		want := reference(t, s)
		for _, spare := range []int{0, 1, 7, 8, 15, 16, 17, len(want) - 2, len(want), len(want) + 40} {
			dst := make([]byte, 3, 3+max(spare, 0))
			copy(dst, "abc")
			full := dst[:cap(dst)]
			for i := 3; i < len(full); i++ {
				full[i] = '#'
			}
			got := AppendString(dst, s)
			if !bytes.Equal(got[3:], want) || string(got[:3]) != "abc" {
				t.Fatalf("AppendString(%q) with %d spare bytes\n got %q\nwant %q", s, spare, got, want)
			}
			if &got[0] == &full[0] { // written in place: nothing past its end
				for i := len(got); i < len(full); i++ {
					if full[i] != '#' {
						t.Fatalf("AppendString(%q) with %d spare bytes wrote byte %d, past its end %d", s, spare, i, len(got))
					}
				}
			}
		}
	}
}

// FuzzAppendString: any string quotes as encoding/json quotes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", `a"b\c`, "\x00\u2028\xff<&>", strings.Repeat(`{"a":"\u00e9"}`, 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString([]byte("x"), s), append([]byte("x"), reference(t, s)...); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q)\n got %q\nwant %q", s, got, want)
		}
	})
}

func TestAppendTimeQuotesTheLayoutInUTC(t *testing.T) {
	const layout = "2006-01-02T15:04:05.000000Z07:00"
	for _, at := range []time.Time{
		time.Date(2025, 3, 14, 12, 0, 0, 123456000, time.FixedZone("x", 3600)),
		time.Unix(0, 0), time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(12345, 12, 31, 23, 59, 59, 999999000, time.UTC),
	} {
		if got, want := AppendTime([]byte("x"), at, layout), append([]byte("x"), reference(t, at.UTC().Format(layout))...); !bytes.Equal(got, want) {
			t.Errorf("AppendTime(%v) = %s, want %s", at, got, want)
		}
	}
}

func TestSortedKeysSortsByBytesWithoutAllocating(t *testing.T) {
	h := map[string][]string{"b": nil, "B": nil, "a-b": nil, "\xff": nil, "é": nil}
	want := []string{"B", "a-b", "b", "é", "\xff"}
	var onStack [8]string
	if got := SortedKeys(onStack[:0], h); !slices.Equal(got, want) {
		t.Fatalf("SortedKeys = %q, want %q", got, want)
	}
	allocs := testing.AllocsPerRun(100, func() {
		var onStack [8]string
		_ = SortedKeys(onStack[:0], h)
	})
	if allocs != 0 {
		t.Fatalf("SortedKeys into a large enough array allocated %v times, want 0", allocs)
	}
}

// BenchmarkAppendString quotes a JSON body of the kind clients log, dense with
// quotes that need escaping, plain text, and a header's name and value.
func BenchmarkAppendString(b *testing.B) {
	body := `{"items":[` + strings.Repeat(`{"sku":"SKU-00042","name":"standard \"warehouse\" item","qty":3,"price":12.5},`, 50) + `{}]}`
	plain := strings.Repeat("Mozilla/5.0 (X11; Linux x86_64) text/html,application/xhtml+xml ", 60)
	for name, s := range map[string]string{"json": body, "plain": plain, "header": "Sec-Fetch-Mode", "token": "OvfGGQMc8ZkYhkTiTNOPNkoempMBWfzVA"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			buf := AppendString(nil, s)
			for b.Loop() {
				buf = AppendString(buf[:0], s)
			}
		})
	}
}

package dayfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// valueOf is a content value of coding zstd declaring size for frame.
func valueOf(size uint64, frame []byte) []byte {
	return append(binary.AppendUvarint([]byte{codingZstd}, size), frame...)
}

// streamFrame compresses data as a stream does: its frame does not say
// how long it inflates.
func streamFrame(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestContentRoundTrip(t *testing.T) {
	var p packer
	for _, body := range []string{"", "{}", strings.Repeat("lorem ipsum ", 1000), strings.Repeat("x", 5<<20)} {
		value := p.pack([]byte(`{"A":["1"]}`), body, []byte(`{}`), body+"!")
		if value == nil {
			if len(body) > 100 {
				t.Errorf("a body of %d repeated bytes was not compressed", len(body))
			}
			continue
		}
		got, err := unpack(bytes.Clone(value), nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.requestHeader) != `{"A":["1"]}` || string(got.requestBody) != body ||
			string(got.responseHeader) != `{}` || string(got.responseBody) != body+"!" {
			t.Errorf("a body of %d bytes read back as %d and %d", len(body), len(got.requestBody), len(got.responseBody))
		}
	}
}

// No value inflates past the length it declares, nor allocates for a
// length its frame cannot hold; each such value is an error, not a panic.
func TestContentInflatesNoMoreThanDeclared(t *testing.T) {
	bomb := bytes.Repeat([]byte{'x'}, 5<<20)
	whole := sharedCodec().enc.EncodeAll(bomb, nil) // says 5 MiB in its header
	stream := streamFrame(t, bomb)                  // says nothing
	cases := map[string][]byte{
		"a frame of 5 MiB declared as 1 KiB":          valueOf(1024, whole),
		"a stream of 5 MiB declared as 1 KiB":         valueOf(1024, stream),
		"1 GiB declared for a few bytes":              valueOf(1<<30, whole[:8]),
		"2^62 declared":                               valueOf(1<<62, whole),
		"an unknown coding":                           append([]byte{9}, whole...),
		"nothing":                                     {},
		"a length without its end":                    {codingZstd, 0x80},
		"garbage":                                     valueOf(100, []byte("not a zstd frame at all")),
		"a frame cut short":                           valueOf(5<<20, whole[:len(whole)/2]),
		"lengths of texts past the payload inflated":  valueOf(3, sharedCodec().enc.EncodeAll([]byte{5, 5, 5}, nil)),
		"one byte less declared than it inflates to":  valueOf(uint64(len(bomb)-1), whole),
		"one byte more declared than it inflates to":  valueOf(uint64(len(bomb)+1), whole),
		"a stream one byte more than it inflates to":  valueOf(uint64(len(bomb)+1), stream),
		"a stream declared 1 byte, inflating 5 MiB":   valueOf(1, stream),
		"a frame whose checksum does not match bytes": corruptMiddle(valueOf(uint64(len(bomb)), whole)),
	}
	for name, value := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := unpack(value, nil)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, errCorruptContent) {
			t.Errorf("%s: unpack = %v; want a corrupt value", name, err)
		}
		if grew, room := after.TotalAlloc-before.TotalAlloc, roomFor(value)+1<<20; grew > room {
			t.Errorf("%s: unpack allocated %d bytes; want at most %d, the room its value may declare and a MiB", name, grew, room)
		}
	}
}

// roomFor is what a value may make unpack allocate: the length it
// declares, if its frame can hold it.
func roomFor(value []byte) uint64 {
	if len(value) == 0 {
		return 0
	}
	size, n := binary.Uvarint(value[1:])
	if n <= 0 || size > uint64(len(value)-1-n)*maxInflation {
		return 0
	}
	return size
}

// corruptMiddle flips the bits of the byte in the middle of value.
func corruptMiddle(value []byte) []byte {
	value = bytes.Clone(value)
	value[len(value)/2] ^= 0xff
	return value
}

// A skeleton keeps names and punctuation and blanks every value: it is
// what a dictionary is made of.
func TestSkeletonHoldsNoValue(t *testing.T) {
	for raw, want := range map[string]string{
		`{"X-User":["ada@example.com","b"],"Accept":[]}`:        `{"X-User":["",""],"Accept":[]}`,
		` {"a": {"b": [1, 2.5e3, "x"]}, "c": null, "d": true} `: `{"a":{"b":[0,0,""]},"c":null,"d":true}`,
		`"a bare string"`:                                            `""`,
		`not json at all, ada@example.com`:                           ``,
		`{"unterminated": "ada@example.com"`:                         ``,
		strings.Repeat("[", 40) + `"deep"` + strings.Repeat("]", 40): strings.Repeat("[", skeletonDepth+1) + strings.Repeat("]", skeletonDepth+1),
	} {
		if got := string(appendSkeleton(nil, []byte(raw))); got != want {
			t.Errorf("skeleton of %.40q = %q; want %q", raw, got, want)
		}
	}
}

// What a file knows of its dictionaries only grows: a read of them begun
// before an Append made one, kept after it, does not undo it.
func TestDictionariesAreNotUndone(t *testing.T) {
	codec, err := newDictCodec(1, []byte(`{"a":"","b":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var f File
	made := &fileDictionaries{byID: dictionaries{1: codec}, built: true}
	f.noteDictionaries(&fileDictionaries{})
	if got := f.noteDictionaries(made); got != made {
		t.Fatal("a dictionary made did not replace none")
	}
	if got := f.noteDictionaries(&fileDictionaries{}); got != made || f.dictionary(1) != codec {
		t.Fatal("a read from before the dictionary undid it")
	}
}

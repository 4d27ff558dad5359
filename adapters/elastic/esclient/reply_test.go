package esclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
)

// Strings are read as encoding/json reads them: the same text where it
// accepts the string, an error (or text left over) where it refuses it.
func FuzzReplyReaderString(f *testing.F) {
	for _, s := range append(slices.Clone(fixtures.Strings), `\"`, `\\`, `\u00e9\ud83d\ude80`, `\ud800`, `\ud800\u0041`, `\udc00\ud800`,
		`\x`, `\u12`, "\x00", `a\`, `\/\b\f\n\r\t`, "\xff\xfe", `\ud83d\ude8`, `\\\"`, strings.Repeat("é", 40000)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		data := []byte(`"` + s + `"`)
		var want string
		jsonErr := json.Unmarshal(data, &want)
		w := NewReplyReader(bytes.NewReader(data))
		got := w.ReadString()
		readErr := w.err
		w.peek()
		atEnd := readErr == nil && errors.Is(w.err, io.ErrUnexpectedEOF)
		w.Release()
		// Read a byte at a time, every escape crosses the end of what was read.
		w = NewReplyReader(iotest.OneByteReader(bytes.NewReader(data)))
		if got1, err1 := w.ReadString(), w.err; got1 != got || (err1 == nil) != (readErr == nil) {
			t.Fatalf("%q: read byte by byte %q (%v), at once %q (%v)", data, got1, err1, got, readErr)
		}
		w.Release()
		// ReadText reads what ReadString reads, through the scratch buffer.
		w = NewReplyReader(iotest.HalfReader(bytes.NewReader(data)))
		if text, err2 := w.ReadText(), w.err; (err2 == nil) != (readErr == nil) || (err2 == nil && string(text) != got) {
			t.Fatalf("%q: text reads %q (%v), string %q (%v)", data, text, err2, got, readErr)
		}
		w.Release()
		switch {
		case jsonErr == nil && (readErr != nil || !atEnd):
			t.Fatalf("%q: encoding/json reads %q, the reader fails (%v) or leaves text", data, want, readErr)
		case jsonErr == nil && got != want:
			t.Fatalf("%q: the reader reads %q, encoding/json %q", data, got, want)
		case jsonErr != nil && readErr == nil && atEnd:
			t.Fatalf("%q: encoding/json refuses it (%v), the reader reads %q", data, jsonErr, got)
		}
	})
}

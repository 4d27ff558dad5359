package capture

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Bodies sent with a content coding (gzip, deflate, br) are recorded decoded,
// so that the rules, the word index and a reader see their text, not bytes
// of a compressed stream: a secret inside a gzip body is then matched like
// any other. Decoding stops at the body cap (Options.MaxBodyBytes), whatever
// the stream would inflate to, so a small body that inflates to gigabytes
// costs no more than the cap.

// Decoder reads the text of a body sent with a content coding.
type Decoder func(io.Reader) (io.Reader, error)

// StandardDecoders are the codings the standard library decodes, which a
// recorder decodes unless Options.Decoders says otherwise: gzip and deflate.
// (reqlogd's proxy adds br; its decoder is a module of its own, which a Go
// server that embeds the middleware need not link.)
func StandardDecoders() map[string]Decoder {
	return map[string]Decoder{
		"gzip":    func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"x-gzip":  func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"deflate": newDeflateReader,
	}
}

// newDeflateReader reads HTTP's deflate: zlib, as RFC 9110 says, or the raw
// deflate stream some servers send instead.
func newDeflateReader(r io.Reader) (io.Reader, error) {
	raw, err := io.ReadAll(io.LimitReader(r, 2)) // zlib's header, told from raw deflate by its check
	if err != nil {
		return nil, err
	}
	rest := io.MultiReader(bytes.NewReader(raw), r)
	if len(raw) == 2 && raw[0]&0x0f == 8 && (uint16(raw[0])<<8|uint16(raw[1]))%31 == 0 {
		return zlib.NewReader(rest)
	}
	return flate.NewReader(rest), nil
}

// decoderOf is the decoder of the one coding h's Content-Encoding names, or
// nil for none, identity, a coding not in decoders, or more than one (a
// chain is kept as sent).
func decoderOf(h http.Header, decoders map[string]Decoder) (string, Decoder) {
	values := h.Values("Content-Encoding")
	if len(values) != 1 || strings.Contains(values[0], ",") {
		return "", nil
	}
	coding := strings.ToLower(strings.TrimSpace(values[0]))
	return coding, decoders[coding]
}

// decodedText is the text of a body captured with coding, read by open: its first limit
// bytes decoded, with the capture's truncation marker when more was sent or
// decoding stopped short. ok is false when not a byte of it decodes: the
// body is then recorded as captured.
func decodedText(coding string, open Decoder, captured []byte, whole bool, limit int) (text string, ok bool) {
	r, err := open(bytes.NewReader(captured))
	if err != nil {
		return "", false
	}
	decoded, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(decoded) == 0 && err != nil {
		return "", false
	}
	switch {
	case len(decoded) > limit:
		return string(cutAtRune(decoded[:limit])) + fmt.Sprintf("…[truncated by reqlog capture: %s body, at least %d bytes decoded]", coding, len(decoded)), true
	case err != nil || !whole:
		return string(cutAtRune(decoded)) + fmt.Sprintf("…[truncated by reqlog capture: %s body, %d bytes decoded before it was cut]", coding, len(decoded)), true
	}
	return string(decoded), true
}

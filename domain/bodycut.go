package domain

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CaptureMarker begins the note a capture appends to a body it cut
// ("…[truncated by reqlog capture: 123456 bytes total]").
const CaptureMarker = "…[truncated by reqlog capture: "

// CutBody is body held to limit bytes, cut at a UTF-8 character boundary and
// followed by the capture's marker, for a capture that sent more than it keeps
// so that the privacy rules read a secret straddling its cap whole, before the
// cut. size is the body's length as submitted, the total the marker states; a
// marker body ends with already (the capture cut it too) is kept as it is.
func CutBody(body string, limit, size int) string {
	text, marker := body, fmt.Sprintf("%s%d bytes total]", CaptureMarker, size)
	if i := strings.LastIndex(body, CaptureMarker); i >= 0 && strings.HasSuffix(body, "]") {
		text, marker = body[:i], body[i:]
	}
	if len(text) <= limit {
		return body
	}
	text = text[:limit]
	for i := 0; i < utf8.UTFMax-1 && text != ""; i++ {
		if r, width := utf8.DecodeLastRuneInString(text); r != utf8.RuneError || width != 1 {
			break
		}
		text = text[:len(text)-1]
	}
	return text + marker
}

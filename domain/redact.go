package domain

import (
	"bytes"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// DefaultRedactedFields are the body fields whose values are never stored. Names
// match case-insensitively and ignoring '-' and '_', so "api_key" also covers
// "apiKey", "API-KEY" and "apikey".
var DefaultRedactedFields = []string{
	"password", "passwd", "secret", "client_secret", "private_key",
	"api_key", "access_token", "refresh_token", "id_token", "token", "authorization",
	"card_number", "cvv", "cvc", "ssn",
}

// maskedJSONValue replaces a redacted JSON value of any type.
const maskedJSONValue = `"` + Mask + `"`

// fieldSet holds redacted field names in the form redactionKey gives. Every key
// of every JSON body is looked up, and few are redacted: a sketch of the names'
// lengths and first and last bytes turns most keys away before the map is hashed.
type fieldSet struct {
	names  map[string]bool
	sketch [4]uint64 // bit sketchBit(name) of each name
	// keyLiteral is hasKeyLiteral, made once: a method value made for each
	// body that Check is handed would cost an allocation per body.
	keyLiteral func(literal []byte) bool
}

// newFieldSet folds names and sketches them.
func newFieldSet(names []string) fieldSet {
	f := &fieldSet{names: make(map[string]bool, len(names))}
	for _, name := range names {
		folded := redactionKey(name)
		f.names[folded] = true
		bit := sketchBit(folded)
		f.sketch[bit/64] |= 1 << (bit % 64)
	}
	f.keyLiteral = f.hasKeyLiteral // bound to f: no copy of the set per call
	return *f
}

// sketchBit mixes the length and the first and last bytes of a folded name
// into one of 256 bits; odd multipliers spread them. Names sharing a bit (""
// has bit 0) only cost a map lookup.
func sketchBit[T string | []byte](folded T) uint8 {
	if len(folded) == 0 {
		return 0
	}
	return uint8(len(folded)*37 + int(folded[0])*11 + int(folded[len(folded)-1]))
}

func (f fieldSet) empty() bool { return len(f.names) == 0 }

// holds reports whether folded, a name as redactionKey folds it, is in f.
func (f fieldSet) holds(folded []byte) bool {
	bit := sketchBit(folded)
	return f.sketch[bit/64]&(1<<(bit%64)) != 0 && f.names[string(folded)]
}

var dropSeparators = strings.NewReplacer("-", "", "_", "")

// redactionKey folds a field name for matching, without '-' and '_': two names
// fold alike when strings.EqualFold says they are equal, as encoding/json matches
// keys to struct fields, so a Go service reads "paſſword" (a long s) and
// "\u212Aey" (the Kelvin sign) as password and key. Each rune becomes the smallest
// of its case-folding orbit, and an ASCII letter then its lower case, so ASCII
// names fold as foldPlain folds them.
func redactionKey(name string) string {
	name = dropSeparators.Replace(name)
	var folded strings.Builder
	folded.Grow(len(name))
	for _, r := range name {
		folded.WriteRune(foldRune(r))
	}
	return folded.String()
}

// foldRune returns the smallest rune that unicode.SimpleFold cycles through from
// r, lower-cased when that is an ASCII letter.
func foldRune(r rune) rune {
	smallest := r
	for next := unicode.SimpleFold(r); next != r; next = unicode.SimpleFold(next) {
		smallest = min(smallest, next)
	}
	if 'A' <= smallest && smallest <= 'Z' {
		return smallest + 'a' - 'A'
	}
	return smallest
}

// has reports whether name folds to a redacted field.
func (f fieldSet) has(name string) bool {
	var buf [64]byte
	if folded, ok := foldPlain(&buf, name); ok {
		return f.holds(folded)
	}
	return f.names[redactionKey(name)]
}

// foldPlain folds name as redactionKey does, into buf, when it is plain ASCII (no
// backslash, so a key literal's content folds as it is) of at most 64 bytes
// folded: the common case, which then allocates nothing. ok is false otherwise.
func foldPlain[T string | []byte](buf *[64]byte, name T) (folded []byte, ok bool) {
	folded = buf[:0]
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '\\' || c >= utf8.RuneSelf || len(folded) == len(buf):
			return nil, false
		case c == '-' || c == '_':
		case 'A' <= c && c <= 'Z':
			folded = append(folded, c+'a'-'A')
		default:
			folded = append(folded, c)
		}
	}
	return folded, true
}

// hasFormKey reports whether a form key names a redacted field, itself or in the
// bracket notation of Rails, PHP and qs (user[password], password[],
// user[credentials][token]): any of its segments counts. Spaces and line ends
// around it do not count, as PHP drops leading spaces.
func (f fieldSet) hasFormKey(name string) bool {
	name = strings.TrimSpace(name)
	if f.has(name) {
		return true
	}
	if !strings.ContainsAny(name, "[]") {
		return false
	}
	for segment := range strings.FieldsFuncSeq(name, isBracket) {
		if f.has(segment) {
			return true
		}
	}
	return false
}

func isBracket(r rune) bool { return r == '[' || r == ']' }

// redactSet returns the folded names of p.RedactedFields.
func (p Policy) redactSet() fieldSet { return newFieldSet(p.RedactedFields) }

const formMediaType = "application/x-www-form-urlencoded"

// redactBody returns body as a message keeps it: the values of redacted fields
// replaced in a form body (by its shape or its derived content type) or in any
// JSON body, whatever type it declares. JSON sent as text/plain, text/json,
// under two Content-Types or as a form (curl -d and jQuery send JSON as a form
// by default) carries the same secrets, and so do JSON cut short, JSON after
// byte order marks and a form sent without its Content-Type. Other bodies are
// kept as they are. The result never refers to body, which is the caller's to
// reuse afterwards. isJSON says it found body JSON nesting at most MaxNesting
// deep (Content.JSONBody); false when not, or when it did not look.
func redactBody(body []byte, contentType string, fields fieldSet) (redacted string, isJSON bool) {
	if fields.empty() || len(body) == 0 {
		return string(body), false
	}
	// The marks are kept, and skipped in one step: a call each would copy the
	// rest of the body each time.
	if marks := byteOrderMarks(body); marks > 0 {
		redacted, isJSON := redactBody(body[marks:], contentType, fields)
		return string(body[:marks]) + redacted, isJSON
	}
	switch {
	case formShaped(body):
		return redactForm(string(body), fields), false
	case contentType == formMediaType:
		return redactDeclaredForm(body, fields)
	}
	return redactJSON(body, fields)
}

// redactDeclaredForm redacts a body whose content type is a form: as JSON when
// it is valid JSON, as a form otherwise, and as both when it starts like JSON
// without being valid (JSON cut short, or a form whose first key has a bracket).
// isJSON is redactBody's.
func redactDeclaredForm(body []byte, fields fieldSet) (redacted string, isJSON bool) {
	if !startsLikeJSON(body) {
		return redactForm(string(body), fields), false
	}
	if redacted, valid, isJSON := redactValidJSON(body, fields); valid {
		return redacted, isJSON
	}
	// A pass can uncover what the other reads anew (masking a form value can drop
	// the quote that opened a JSON string), so they run until neither changes
	// anything, and redacting the result again changes nothing either.
	redacted = string(body)
	for range maxBothWaysPasses {
		again := redactForm(redactBrokenJSON([]byte(redacted), fields), fields)
		if again == redacted {
			break
		}
		redacted = again
	}
	return redacted, false
}

// maxBothWaysPasses bounds redactDeclaredForm's passes; each masks more, and
// the fuzzer's worst case settles after three.
const maxBothWaysPasses = 9

// formKeyName decodes a form key as the most lenient server reads it (PHP): '+'
// is a space, a valid %XX its byte, a bad escape kept as written, and the name
// ends at a NUL, sent or decoded (PHP takes the C string's length). A strict
// decoder that gave up on a bad escape elsewhere in the key would miss
// pass%77ord[%zz].
func formKeyName(key string) string {
	if !strings.ContainsAny(key, "+%\x00") {
		return key
	}
	name := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == 0:
			return string(name)
		case c == '+':
			name = append(name, ' ')
		case c == '%' && i+2 < len(key) && jsonbytes.IsHex(key[i+1]) && jsonbytes.IsHex(key[i+2]):
			b := jsonbytes.HexValue(key[i+1])<<4 | jsonbytes.HexValue(key[i+2])
			if b == 0 {
				return string(name)
			}
			name = append(name, b)
			i += 2
		default:
			name = append(name, c)
		}
	}
	return string(name)
}

// strictFormKeyName decodes a form key as url.ParseQuery does, reporting
// whether that can differ from formKeyName's reading: only past a NUL, sent or
// decoded. A key url.ParseQuery cannot decode it skips, so then formKeyName's
// reading is the only one.
func strictFormKeyName(key string) (name string, readsOtherwise bool) {
	if !strings.Contains(key, "\x00") && !strings.Contains(key, "%00") {
		return "", false
	}
	name, err := url.QueryUnescape(key)
	return name, err == nil
}

// byteOrderMark is UTF-8's; RFC 8259 lets a JSON parser ignore it, and many do.
var byteOrderMark = []byte("\uFEFF")

// byteOrderMarks is the length of the byte order marks body starts with.
func byteOrderMarks(body []byte) int {
	n := 0
	for bytes.HasPrefix(body[n:], byteOrderMark) {
		n += len(byteOrderMark)
	}
	return n
}

// startsLikeJSON reports whether body's first byte after whitespace opens an
// object or an array.
func startsLikeJSON(body []byte) bool {
	start := jsonbytes.SkipSpace(body, 0)
	return start < len(body) && (body[start] == '{' || body[start] == '[')
}

// formShaped reports whether body can only be a form: nothing but the characters
// of a URL query (no spaces, quotes or braces, so never JSON or prose) and an =
// in every &-separated pair. Line ends around the pairs, as a file or a heredoc
// leaves them, do not count.
func formShaped(body []byte) bool {
	body = bytes.Trim(body, "\r\n")
	for i := range len(body) {
		if !queryChar[body[i]] {
			return false // JSON and prose stop here, mostly at their first byte
		}
	}
	for pair := range bytes.SplitSeq(body, []byte("&")) {
		if len(pair) > 0 && bytes.IndexByte(pair, '=') < 0 {
			return false
		}
	}
	return true
}

// queryChar holds the bytes RFC 3986 allows in a query, with the brackets of
// bracket-notation keys.
var queryChar = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%!$&'()*+,;=:@/?[]") {
		t[c] = true
	}
	return t
}()

// redactJSON replaces each value under a redacted key, at any depth, with the
// mask string; in valid JSON the validator finds them in its one pass, and a
// body that only starts like JSON goes to redactBrokenJSON. Every other byte
// (key order, whitespace, number spelling) is kept, which decoding and
// re-encoding would not do. isJSON is redactBody's.
func redactJSON(body []byte, fields fieldSet) (redacted string, isJSON bool) {
	if redacted, valid, isJSON := redactValidJSON(body, fields); valid {
		return redacted, isJSON
	}
	return redactBrokenJSON(body, fields), false
}

// redactValidJSON redacts body if it is valid JSON, reporting whether it was,
// and whether it also nests at most MaxNesting deep (isJSON, redactBody's):
// masking a value with a string keeps both true of what it returns.
func redactValidJSON(body []byte, fields fieldSet) (redacted string, valid, isJSON bool) {
	notes := jsonbytes.Notes{MasksValueOf: fields.keyLiteral}
	if jsonbytes.Check(body, jsonbytes.MaxDepth, &notes) != jsonbytes.Valid {
		return "", false, false
	}
	return masked(body, notes.Masked), true, notes.Depth <= MaxNesting
}

// masked copies body with each of the ordered, disjoint spans replaced by the mask.
func masked(body []byte, spans []jsonbytes.Span) string {
	if len(spans) == 0 {
		return string(body)
	}
	var out strings.Builder
	out.Grow(len(body))
	copied := 0
	for _, span := range spans {
		out.Write(body[copied:span.Start])
		out.WriteString(maskedJSONValue)
		copied = span.End
	}
	out.Write(body[copied:])
	return out.String()
}

// redactBrokenJSON masks what it can in a body that starts like JSON but is not
// valid: cut short by a client's size cap (as adapters/capture cuts bodies over
// its limit), several documents in a row, or a syntax error further on. Storing
// such a body as sent would keep its secrets. It reads strings and brackets as
// they come; the value after a redacted key and its colon is masked up to where
// it ends, or to the end of the body when it does not end. Other bodies are
// returned unchanged.
func redactBrokenJSON(body []byte, fields fieldSet) string {
	if !startsLikeJSON(body) {
		return string(body)
	}
	var spans []jsonbytes.Span
	var inObject []bool // for each open bracket: is it an object?
	expectKey := false
	for i := 0; i < len(body); {
		switch body[i] {
		case '{', '[':
			inObject = append(inObject, body[i] == '{')
			expectKey = body[i] == '{'
			i++
		case '}', ']':
			if len(inObject) > 0 {
				inObject = inObject[:len(inObject)-1]
			}
			expectKey = false
			i++
		case ',':
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			i++
		case '"':
			end := jsonbytes.StringEnd(body, i)
			colon := jsonbytes.SkipSpace(body, end)
			isKey := expectKey && colon < len(body) && body[colon] == ':' && jsonbytes.ValidStringEnd(body, i) == end
			if !isKey || !fields.hasKeyLiteral(body[i:end]) {
				i, expectKey = end, false
				continue
			}
			start := jsonbytes.SkipSpace(body, colon+1)
			stop := jsonbytes.ValueEnd(body, start) // the end of the body if the value is cut off
			if start < stop {
				spans = append(spans, jsonbytes.Span{Start: start, End: stop})
			}
			i, expectKey = max(stop, start), false
		default: // ':', whitespace, numbers, literals and stray bytes; only whitespace keeps a key due
			expectKey = expectKey && jsonbytes.IsSpace(body[i])
			i++
		}
	}
	return masked(body, spans)
}

// hasKeyLiteral reports whether a key literal (quotes included) of a
// well-formed JSON body names a redacted field. It runs for every key of every
// body: a plain key is folded in the one pass that finds it plain.
func (f *fieldSet) hasKeyLiteral(literal []byte) bool {
	var buf [64]byte
	if folded, ok := foldPlain(&buf, literal[1:len(literal)-1]); ok {
		return f.holds(folded)
	}
	return f.has(jsonbytes.Unquote(literal))
}

// redactForm replaces the values of redacted keys in an urlencoded form, keeping
// the order of the pairs and every other byte.
func redactForm(body string, fields fieldSet) string {
	pairsEnd := len(strings.TrimRight(body, "\r\n")) // line ends after the last pair are kept as sent
	pairs := strings.Split(body[:pairsEnd], "&")
	changed := false
	for i, pair := range pairs {
		key, _, hasValue := strings.Cut(pair, "=")
		if !hasValue {
			continue
		}
		strict, readsOtherwise := strictFormKeyName(key)
		if fields.hasFormKey(formKeyName(key)) || (readsOtherwise && fields.hasFormKey(strict)) {
			pairs[i] = key + "=" + Mask
			changed = true
		}
	}
	if !changed {
		return body
	}
	return strings.Join(pairs, "&") + body[pairsEnd:]
}

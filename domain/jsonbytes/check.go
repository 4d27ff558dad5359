package jsonbytes

// MaxDepth is encoding/json's own nesting limit: Valid refuses what json.Valid
// refuses, documents deeper than that included.
const MaxDepth = 10000

// Verdict is what Check finds.
type Verdict int

const (
	// Valid: the document is well-formed and nests at most the depth asked.
	Valid Verdict = iota
	// Invalid: a syntax error.
	Invalid
	// TooDeep: a container deeper than the depth asked, before any syntax error.
	TooDeep
)

// Span is where a value of a document starts and ends.
type Span struct{ Start, End int }

// MinNotedString is the shortest string Check notes a span for: shorter ones
// are cheaper to scan again than to look up. NotedBytes bounds the spans to one
// per so many bytes of the document, so that a hostile body of tiny containers
// ("[[1],[1],...") cannot make its index outgrow it several times.
const (
	MinNotedString = 64
	NotedBytes     = 64
)

// Notes asks Check to note spans while it validates.
type Notes struct {
	// With Values, Spans gets each non-empty container and each string of at
	// least MinNotedString bytes: every one, up to one per NotedBytes of data.
	// An Ends index made of them lets a walk jump over those values.
	Values bool
	Spans  []Span
	// With MasksValueOf, Masked gets the value of each member whose key literal
	// (quotes included) it reports true for, at any depth; members inside a
	// value already noted are not asked about.
	MasksValueOf func(keyLiteral []byte) bool
	Masked       []Span
	// Depth gets how deeply the document's arrays and objects nest (0 for
	// a scalar), so that a caller that validated it under a looser bound
	// knows whether it fits a tighter one (Check with that maxDepth).
	Depth int
}

// stringPlain marks the bytes a string may hold without an escape.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// IsValid answers exactly as json.Valid does, several times faster: strings
// are scanned through a table, invalid UTF-8 inside them is accepted as
// json.Valid accepts it, and no state function is called per byte.
func IsValid[T string | []byte](data T) bool {
	return Check(data, MaxDepth, nil) == Valid
}

// Check validates data as IsValid does, in the same pass refusing arrays and
// objects nested more than maxDepth deep, and noting what notes (if not nil)
// asks for. Up to a maxDepth of 64, nothing is allocated but the notes.
func Check[T string | []byte](data T, maxDepth int, notes *Notes) Verdict {
	// The stacks start on the goroutine's stack: a body that nests too deeply is
	// refused without a heap allocation.
	var openOnStack [64]byte
	var startsOnStack [64]int
	open := openOnStack[:0]     // '{' or '[' for each enclosing container
	starts := startsOnStack[:0] // where each enclosing container starts, with spans
	spans := notes != nil && notes.Values
	masking := notes != nil && notes.MasksValueOf != nil
	maxSpans := len(data)/NotedBytes + 16
	maskDepth, maskStart := -1, 0 // the depth of the member whose value is being noted
	// member checks the member key at i and returns where its value starts, or -1.
	member := func(i int) int {
		keyEnd, value := validMemberKey(data, i)
		if value >= 0 && masking && maskDepth < 0 && notes.MasksValueOf([]byte(data[i:keyEnd])) {
			maskDepth, maskStart = len(open), value
		}
		return value
	}
	i := SkipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return Invalid
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(open) == maxDepth {
				return TooDeep
			}
			if notes != nil && len(open) == notes.Depth {
				notes.Depth++
			}
			start := i
			i = SkipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' and ']' follow '{' and '[' by two
				i++
				break
			}
			open = append(open, c)
			if spans {
				starts = append(starts, start)
			}
			if c == '{' {
				if i = member(i); i < 0 {
					return Invalid
				}
			}
			continue
		case '"':
			start := i
			if i = ValidStringEnd(data, i); spans && i-start >= MinNotedString && len(notes.Spans) < maxSpans {
				notes.Spans = append(notes.Spans, Span{start, i})
			}
		case 't':
			i = literalEnd(data, i, "true")
		case 'f':
			i = literalEnd(data, i, "false")
		case 'n':
			i = literalEnd(data, i, "null")
		default:
			i = validNumberEnd(data, i)
		}
		if i < 0 {
			return Invalid
		}
		// A value ended at i: close containers until another value is due.
		for {
			if len(open) == maskDepth { // the noted member's value ended at i
				notes.Masked = append(notes.Masked, Span{maskStart, i})
				maskDepth = -1
			}
			i = SkipSpace(data, i)
			if len(open) == 0 {
				if i != len(data) {
					return Invalid
				}
				return Valid
			}
			if i >= len(data) {
				return Invalid
			}
			top := open[len(open)-1]
			if data[i] == top+2 {
				open = open[:len(open)-1]
				i++
				if spans {
					if len(notes.Spans) < maxSpans {
						notes.Spans = append(notes.Spans, Span{starts[len(starts)-1], i})
					}
					starts = starts[:len(starts)-1]
				}
				continue
			}
			if data[i] != ',' {
				return Invalid
			}
			i = SkipSpace(data, i+1)
			if top == '{' {
				if i = member(i); i < 0 {
					return Invalid
				}
			}
			break
		}
	}
}

// validMemberKey checks `"key" :` at i and returns where the key literal ends
// and where the value starts, or -1 for both.
func validMemberKey[T string | []byte](data T, i int) (keyEnd, value int) {
	if i >= len(data) || data[i] != '"' {
		return -1, -1
	}
	if keyEnd = ValidStringEnd(data, i); keyEnd < 0 {
		return -1, -1
	}
	if i = SkipSpace(data, keyEnd); i >= len(data) || data[i] != ':' {
		return -1, -1
	}
	return keyEnd, SkipSpace(data, i+1)
}

// ValidStringEnd returns the index after the string literal at data[i], or -1
// if it is not one.
func ValidStringEnd[T string | []byte](data T, i int) int {
	for i++; i < len(data); {
		if stringPlain[data[i]] {
			i++
			continue
		}
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(data) {
				return -1
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !IsHex(data[i+2]) || !IsHex(data[i+3]) || !IsHex(data[i+4]) || !IsHex(data[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
	return -1
}

// IsHex reports whether c is a hex digit.
func IsHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// HexValue is the value of the hex digit c.
func HexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// isDigit reports whether c is a decimal digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validNumberEnd returns the index after the number at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumberEnd[T string | []byte](data T, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digitsEnd(data, i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i+1 >= len(data) || !isDigit(data[i+1]) {
			return -1
		}
		i = digitsEnd(data, i+1)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		i = digitsEnd(data, i)
	}
	return i
}

func digitsEnd[T string | []byte](data T, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// literalEnd returns the index after word at i, or -1.
func literalEnd[T string | []byte](data T, i int, word string) int {
	if len(data)-i < len(word) {
		return -1
	}
	for j := 0; j < len(word); j++ {
		if data[i+j] != word[j] {
			return -1
		}
	}
	return i + len(word)
}

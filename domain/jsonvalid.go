package domain

// validJSON answers exactly as json.Valid does, several times faster: the hot
// path checks every POST body and every stored body that claims to be JSON, and
// encoding/json's scanner calls a state function per byte. Strings are scanned
// through a table, and invalid UTF-8 inside them is accepted as json.Valid does.

// maxJSONDepth is encoding/json's own nesting limit, kept so that both agree on
// documents deeper than any submission may be.
const maxJSONDepth = 10000

// jsonStringPlain marks the bytes a string may hold without an escape.
var jsonStringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func validJSON[T string | []byte](data T) bool {
	return checkJSON(data, maxJSONDepth, nil) == jsonValid
}

// jsonVerdict is what checkJSON finds.
type jsonVerdict int

const (
	jsonValid jsonVerdict = iota
	jsonInvalid
	jsonTooDeep // a container more than maxDepth deep, before any syntax error
)

// valueSpan is where a value of a checked document starts and ends.
type valueSpan struct{ start, end int }

// minSpannedString is the shortest string checkJSON reports a span for: shorter
// ones are cheaper to scan again than to look up. spannedBytes bounds the spans
// to one per so many bytes of the document, so that a hostile body of tiny
// containers ("[[1],[1],...") cannot make its index outgrow it several times.
const (
	minSpannedString = 64
	spannedBytes     = 64
)

// jsonRecorder asks checkJSON to note spans while it validates: the values
// valueEnds jumps over, and the values redaction masks.
type jsonRecorder struct {
	// With values, spans gets each non-empty container and each string of at
	// least minSpannedString bytes: every one, up to one per spannedBytes of data.
	values bool
	spans  []valueSpan
	// masked gets the value of each member whose key redact has, at any depth;
	// members inside a value already masked are not listed again.
	redact fieldSet
	masked []valueSpan
}

// checkJSON validates data as validJSON does, in the same pass refusing arrays
// and objects nested more than maxDepth deep, so that a POST body is read once
// for both, and noting what rec (if not nil) asks for.
func checkJSON[T string | []byte](data T, maxDepth int, rec *jsonRecorder) jsonVerdict {
	// The stacks start on the goroutine's stack: a body that nests too deeply is
	// refused without a heap allocation.
	var openOnStack [MaxNesting]byte
	var startsOnStack [MaxNesting]int
	open := openOnStack[:0]     // '{' or '[' for each enclosing container
	starts := startsOnStack[:0] // where each enclosing container starts, with spans
	spans := rec != nil && rec.values
	redact := rec != nil && !rec.redact.empty()
	maxSpans := len(data)/spannedBytes + 16
	maskDepth, maskStart := -1, 0 // the depth of the member whose value is being masked
	// member checks the member key at i and returns where its value starts, or -1.
	member := func(i int) int {
		keyEnd, value := validMemberKey(data, i)
		if value >= 0 && redact && maskDepth < 0 && redactsKey(rec.redact, data, i, keyEnd) {
			maskDepth, maskStart = len(open), value
		}
		return value
	}
	i := skipJSONSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return jsonInvalid
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(open) == maxDepth {
				return jsonTooDeep
			}
			start := i
			i = skipJSONSpace(data, i+1)
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
					return jsonInvalid
				}
			}
			continue
		case '"':
			start := i
			if i = validStringEnd(data, i); spans && i-start >= minSpannedString && len(rec.spans) < maxSpans {
				rec.spans = append(rec.spans, valueSpan{start, i})
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
			return jsonInvalid
		}
		// A value ended at i: close containers until another value is due.
		for {
			if len(open) == maskDepth { // the masked member's value ended at i
				rec.masked = append(rec.masked, valueSpan{maskStart, i})
				maskDepth = -1
			}
			i = skipJSONSpace(data, i)
			if len(open) == 0 {
				if i != len(data) {
					return jsonInvalid
				}
				return jsonValid
			}
			if i >= len(data) {
				return jsonInvalid
			}
			top := open[len(open)-1]
			if data[i] == top+2 {
				open = open[:len(open)-1]
				i++
				if spans {
					if len(rec.spans) < maxSpans {
						rec.spans = append(rec.spans, valueSpan{starts[len(starts)-1], i})
					}
					starts = starts[:len(starts)-1]
				}
				continue
			}
			if data[i] != ',' {
				return jsonInvalid
			}
			i = skipJSONSpace(data, i+1)
			if top == '{' {
				if i = member(i); i < 0 {
					return jsonInvalid
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
	if keyEnd = validStringEnd(data, i); keyEnd < 0 {
		return -1, -1
	}
	if i = skipJSONSpace(data, keyEnd); i >= len(data) || data[i] != ':' {
		return -1, -1
	}
	return keyEnd, skipJSONSpace(data, i+1)
}

// validStringEnd returns the index after the string literal at i, or -1.
func validStringEnd[T string | []byte](data T, i int) int {
	for i++; i < len(data); {
		if jsonStringPlain[data[i]] {
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
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
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

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

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

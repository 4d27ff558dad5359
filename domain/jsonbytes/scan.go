package jsonbytes

import "iter"

// Kind is the type of a JSON value. The zero Kind, Absent, is no value at all:
// a member that was not sent.
type Kind uint8

const (
	Absent Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

// KindOf classifies a well-formed value by its first byte; Absent if raw is
// empty.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return Absent
	}
	switch c := raw[0]; {
	case c == 'n':
		return Null
	case c == 't' || c == 'f':
		return Bool
	case c == '"':
		return String
	case c == '[':
		return Array
	case c == '{':
		return Object
	}
	return Number
}

// StringEnd returns the index just after the string literal starting at s[i].
// Bodies nested in a submission are mostly escaped quotes, a few bytes apart,
// so a plain loop beats a vectorised search here.
func StringEnd[T string | []byte](s T, i int) int {
	for j := i + 1; j < len(s); j++ {
		if !stringStop[s[j]] {
			continue
		}
		if s[j] == '"' {
			return j + 1
		}
		j++ // past the escaped byte
	}
	return len(s)
}

// stringStop marks the bytes that end a string or start an escape.
var stringStop = [256]bool{'"': true, '\\': true}

// ValueEnd returns the index just after the value starting at s[i], or the
// end of s if it does not end.
func ValueEnd[T string | []byte](s T, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return StringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = StringEnd(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	default:
		j := i
		for j < len(s) && !IsSpace(s[j]) && s[j] != ',' && s[j] != '}' && s[j] != ']' {
			j++
		}
		return j
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace[T string | []byte](s T, i int) int {
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	return i
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Ends maps the first byte of each value Check noted (Notes.Values) to the
// value's length, so that walking the document jumps over those values instead
// of reading them again: a request body's string would otherwise be scanned
// once for each object enclosing it. A nil Ends scans.
type Ends map[*byte]int

// Add indexes the spans Check noted in data.
func (e Ends) Add(data []byte, spans []Span) {
	for _, span := range spans {
		e[&data[span.Start]] = span.End - span.Start
	}
}

// ValueEnd returns the index just after the value starting at s[i].
func (e Ends) ValueEnd(s []byte, i int) int {
	if e != nil && i < len(s) {
		if n, ok := e[&s[i]]; ok {
			return i + n
		}
	}
	return ValueEnd(s, i)
}

// Members yields the keys, as literals with their quotes, and the values of
// the well-formed object obj in the order sent, without decoding them.
func Members(obj []byte, ends Ends) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for i := SkipSpace(obj, 1); i < len(obj) && obj[i] == '"'; {
			keyEnd := StringEnd(obj, i)
			start := SkipSpace(obj, SkipSpace(obj, keyEnd)+1) // past the colon
			end := ends.ValueEnd(obj, start)
			if !yield(obj[i:keyEnd:keyEnd], obj[start:end:end]) {
				return
			}
			if i = SkipSpace(obj, end); i < len(obj) && obj[i] == ',' {
				i = SkipSpace(obj, i+1)
			}
		}
	}
}

// Elements yields the elements of the well-formed array arr.
func Elements(arr []byte, ends Ends) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := SkipSpace(arr, 1); i < len(arr) && arr[i] != ']'; {
			end := ends.ValueEnd(arr, i)
			if !yield(arr[i:end:end]) {
				return
			}
			if i = SkipSpace(arr, end); i < len(arr) && arr[i] == ',' {
				i = SkipSpace(arr, i+1)
			}
		}
	}
}

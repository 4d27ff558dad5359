package domain

// Byte-level JSON scanning for the jobs that must not decode: refusing hostile
// nesting before any parser runs, splitting batches without copying them, and
// redacting bodies without reordering them. Apart from exceedsNesting, the
// functions expect well-formed JSON (json.Valid).

import (
	"encoding/json"
	"fmt"
)

// MaxNesting bounds how deeply the arrays and objects of a POST body nest. A
// submission needs six ({"messages":[{"request":{"header":{"Accept":[...]); the
// limit refuses hostile bodies such as "[[[[..." in one pass, before decoding.
const MaxNesting = 64

// exceedsNesting reports whether data nests arrays and objects more than limit
// levels deep. It allocates nothing and reads each byte once, whatever data is.
func exceedsNesting[T string | []byte](data T, limit int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = jsonStringEnd(data, i) - 1
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// jsonStringEnd returns the index just after the string literal starting at i.
func jsonStringEnd[T string | []byte](s T, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

// batchItems splits a well-formed JSON array into its elements without copying
// them. An array of more than limit elements is refused with ErrTooLarge after
// being counted, so a huge array of tiny items costs one scan, not a decode.
func batchItems(array []byte, limit int) ([]json.RawMessage, error) {
	var items []json.RawMessage
	n := 0
	for i := skipJSONSpace(array, 1); i < len(array) && array[i] != ']'; n++ {
		end := jsonValueEnd(array, i)
		if n < limit {
			items = append(items, json.RawMessage(array[i:end:end]))
		}
		if i = skipJSONSpace(array, end); i < len(array) && array[i] == ',' {
			i = skipJSONSpace(array, i+1)
		}
	}
	if n > limit {
		return nil, fmt.Errorf("batch of %d messages is over the limit of %d: %w", n, limit, ErrTooLarge)
	}
	return items, nil
}

// jsonValueEnd returns the index just after the value starting at i.
func jsonValueEnd[T string | []byte](s T, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return jsonStringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = jsonStringEnd(s, j) - 1
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
		for j < len(s) && !isJSONSpace(s[j]) && s[j] != ',' && s[j] != '}' && s[j] != ']' {
			j++
		}
		return j
	}
}

// skipColon returns the index of the value that follows a key ending at i.
func skipColon(s string, i int) int {
	for i < len(s) && (s[i] == ':' || isJSONSpace(s[i])) {
		i++
	}
	return i
}

func skipJSONSpace[T string | []byte](s T, i int) int {
	for i < len(s) && isJSONSpace(s[i]) {
		i++
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

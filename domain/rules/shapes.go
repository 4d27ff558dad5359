package rules

// Matchers of the detectors of a fixed shape, without the regexp package:
// each gives exactly what its detector's pattern's FindAllStringIndex does
// (TestShapesAsTheirPatterns; the slow way of the differential tests runs
// the patterns). A shape is tried at each place in turn, as the leftmost
// match is found, and the next search starts where a match ends.

// findShapes returns the spans at which shapeAt, called with each place not
// inside an earlier span, finds a match (its end, or -1 for none).
func findShapes(s string, shapeAt func(s string, i int) int) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		if end := shapeAt(s, i); end > i {
			out = append(out, []int{i, end})
			i = end
			continue
		}
		i++
	}
	return out
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isWordByte reports whether c is of \w, whose edges \b matches.
func isWordByte(c byte) bool { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'z' || c == '_' }

// digitStartsWord reports whether \b holds before s[i], a digit.
func digitStartsWord(s string, i int) bool { return i == 0 || !isWordByte(s[i-1]) }

// endsWord reports whether \b holds at end, after a digit.
func endsWord(s string, end int) bool { return end == len(s) || !isWordByte(s[end]) }

// cardAt is `\b\d(?:[ \-]?\d){12,18}\b` at i. Each group's way is forced (a
// separator before a digit, or a digit), so the greedy repeat's match is the
// most groups, 12 to 18, after which \b holds.
func cardAt(s string, i int) int {
	if !isDigit(s[i]) || !digitStartsWord(s, i) {
		return -1
	}
	end, at := -1, i+1
	for group := 1; group <= 18; group++ {
		switch {
		case at+1 < len(s) && (s[at] == ' ' || s[at] == '-') && isDigit(s[at+1]):
			at += 2
		case at < len(s) && isDigit(s[at]):
			at++
		default:
			return end
		}
		if group >= 12 && endsWord(s, at) {
			end = at
		}
	}
	return end
}

// ssnAt is `\b\d{3}-\d{2}-\d{4}\b` at i.
func ssnAt(s string, i int) int {
	const shape = "ddd-dd-dddd"
	if len(s)-i < len(shape) || !digitStartsWord(s, i) {
		return -1
	}
	for k := range len(shape) {
		if c := s[i+k]; shape[k] == 'd' && !isDigit(c) || shape[k] == '-' && c != '-' {
			return -1
		}
	}
	if !endsWord(s, i+len(shape)) {
		return -1
	}
	return i + len(shape)
}

// ipv4At is `\b\d{1,3}(?:\.\d{1,3}){3}\b` at i. Each part is all the digits
// there (fewer would leave a digit where a '.' or \b must be), one to three.
func ipv4At(s string, i int) int {
	if !isDigit(s[i]) || !digitStartsWord(s, i) {
		return -1
	}
	at := i
	for part := range 4 {
		if part > 0 {
			if at == len(s) || s[at] != '.' {
				return -1
			}
			at++
		}
		run := 0
		for at+run < len(s) && isDigit(s[at+run]) && run <= 3 {
			run++
		}
		if run == 0 || run > 3 {
			return -1
		}
		at += run
	}
	if !endsWord(s, at) {
		return -1
	}
	return at
}

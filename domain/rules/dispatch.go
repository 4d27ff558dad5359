package rules

import "strings"

// dispatch lists, for each class of place, the privacy rules that may pick a
// value there, in their order, so that a value meets the few rules that can
// pick it rather than every rule: open ones may pick any value of the class,
// keyed ones only a value of one of their keys (a header's or a query
// parameter's name, a body field's last key).
type dispatch struct {
	open  [classes][]candidate
	keyed [classes]map[string][]candidate
	// keyBloom has bit keyBit(k) set for each key k of keyed: most
	// values' keys are ruled out without hashing them.
	keyBloom [classes][4]uint64
}

// keyBit is a key's bit in dispatch.keyBloom: of its length and its first
// and last bytes.
func keyBit(key string) uint {
	if key == "" {
		return 0
	}
	return (uint(len(key))*61 + uint(key[0]|0x20)*7 + uint(key[len(key)-1]|0x20)) & 255 // ASCII case folded, for header names
}

// candidate is a rule that may pick a value; all says it picks every value
// it is a candidate for, so that its selectors need not be matched.
type candidate struct {
	rule int
	all  bool
}

func newDispatch(rules []privacyRule) dispatch {
	var d dispatch
	for i := range rules {
		r := &rules[i]
		for c := range classes {
			keys, open, reached := r.keysOf(c)
			switch {
			case !reached:
			case open:
				d.open[c] = append(d.open[c], candidate{rule: i, all: r.picksAll(c, "")})
			default:
				if d.keyed[c] == nil {
					d.keyed[c] = map[string][]candidate{}
				}
				for _, k := range keys {
					bit := keyBit(k)
					d.keyBloom[c][bit/64] |= 1 << (bit % 64)
					if list := d.keyed[c][k]; len(list) == 0 || list[len(list)-1].rule != i {
						d.keyed[c][k] = append(list, candidate{rule: i, all: r.picksAll(c, k)})
					}
				}
			}
		}
	}
	return d
}

// keysOf says how the rule may pick values of class c: not at all, any of
// them (open), or those of keys alone.
func (p *privacyRule) keysOf(c class) (keys []string, open, reached bool) {
	for i := range p.selectors {
		s := &p.selectors[i]
		if s.reach()&(1<<c) == 0 {
			continue
		}
		reached = true
		key, keyed := s.key()
		if !keyed {
			return nil, true, true
		}
		keys = append(keys, key)
	}
	return keys, false, reached
}

// picksAll reports whether the rule picks every value of class c with key
// ("" for any key): a selector picks them all and nothing is excepted.
func (p *privacyRule) picksAll(c class, key string) bool {
	if len(p.except) > 0 {
		return false
	}
	for i := range p.selectors {
		s := &p.selectors[i]
		if s.reach()&(1<<c) == 0 {
			continue
		}
		switch {
		case s.every:
			return true
		case s.kind == kindHeader || s.kind == kindQuery:
			if k, keyed := s.key(); !keyed || k == key {
				return true
			}
		case s.kind == kindBody:
			if len(s.path) == 0 || len(s.path) == 1 && s.path[0] == "**" || len(s.path) == 2 && s.path[0] == "**" && s.path[1] == key && key != "" {
				return true
			}
		}
	}
	return false
}

// candidates calls yield with each rule that may pick a value of class c
// with key, in the rules' order, until it returns false; open is d.open[c]
// or a part of it (the rules active where the value is).
func (d *dispatch) candidates(c class, key string, open []candidate, yield func(candidate) bool) {
	keyed := d.keyedOf(c, key)
	for len(open) > 0 || len(keyed) > 0 {
		var next candidate
		if len(keyed) == 0 || len(open) > 0 && open[0].rule < keyed[0].rule {
			next, open = open[0], open[1:]
		} else {
			next, keyed = keyed[0], keyed[1:]
		}
		if !yield(next) {
			return
		}
	}
}

// keyedOf is the rules keyed by key in class c.
func (d *dispatch) keyedOf(c class, key string) []candidate {
	switch byKey := d.keyed[c]; {
	case byKey == nil || !d.mayBeKeyed(c, key):
		return nil
	case c != classRequestHeader && c != classResponseHeader:
		return byKey[key]
	case len(key) <= 64 && isASCII(key):
		var lower [64]byte // header names are keyed in lower case; no copy is made to look one up
		return byKey[string(appendLower(lower[:0], key))]
	default:
		return byKey[strings.ToLower(key)]
	}
}

// mayBeKeyed reports whether a rule may be keyed by key in class c: false
// rules every keyed rule out. A header name not in ASCII may change length
// in lower case, so it is never ruled out.
func (d *dispatch) mayBeKeyed(c class, key string) bool {
	if bit := keyBit(key); d.keyBloom[c][bit/64]&(1<<(bit%64)) != 0 {
		return true
	}
	return (c == classRequestHeader || c == classResponseHeader) && d.keyed[c] != nil && !isASCII(key)
}

// appendLower appends s in lower case (ASCII letters) to dst.
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// openActive is d.open of each class less the rules not active there:
// active for most classes, activeIn[0] and [1] for the request's body and
// the response's (Compiled.activeInBodies). A value then meets no rule its
// message's scope or its body's text has ruled out.
func (d *dispatch) openActive(active []bool, activeIn bodyActive) (out [classes][]candidate) {
	total := 0
	for c := range classes {
		total += len(d.open[c])
	}
	all := make([]candidate, 0, total)
	for c := range classes {
		act := activeIn.of(c, active)
		start := len(all)
		for _, e := range d.open[c] {
			if act[e.rule] {
				all = append(all, e)
			}
		}
		out[c] = all[start:len(all):len(all)]
	}
	return out
}

// bodyActive is which rules are active in the request's body and in the
// response's (Compiled.activeInBodies).
type bodyActive [2][]bool

// narrows reports whether b rules out, for the values of class c, rules
// active in the message.
func (b bodyActive) narrows(c class, active []bool) bool {
	act := b.of(c, active)
	return len(act) > 0 && &act[0] != &active[0]
}

// of is the rules active in a value of class c: b's for a body's, active
// for the others.
func (b bodyActive) of(c class, active []bool) []bool {
	switch c {
	case classRequestBody, classRequestText:
		return b[0]
	case classResponseBody, classResponseText:
		return b[1]
	}
	return active
}

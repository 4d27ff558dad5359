package rules

import (
	"fmt"
	"strings"

	"github.com/reqlog/reqlog/domain"
)

// subjectKey is a compiled SubjectKey.
type subjectKey struct {
	id        string
	selectors []selector
	detector  *detector
}

func compileSubject(fe *domain.FieldErrors, field string, k SubjectKey) (subjectKey, bool) {
	before := len(fe.List)
	p := subjectKey{id: k.ID}
	if (len(k.Select) == 0) == (k.Detector == "") {
		fe.Add(field, "names selectors or a detector, one of them")
	}
	for i, text := range k.Select {
		s, err := parseSelector(text)
		if err != nil {
			fe.Add(fmt.Sprintf("%s.select[%d]", field, i), "%s", err)
			continue
		}
		p.selectors = append(p.selectors, s)
	}
	if k.Detector != "" {
		d, ok := detectors[k.Detector]
		if !ok {
			fe.Add(field+".detector", "must be one of %s", strings.Join(DetectorNames(), ", "))
		}
		p.detector = &d
	}
	return p, len(fe.List) == before
}

// NormalizeSubject is a subject value as it is hashed: without surrounding
// space, in lower case, so that "Ana@Example.com " names who "ana@example.com"
// does.
func NormalizeSubject(value string) string { return strings.ToLower(strings.TrimSpace(value)) }

// SubjectHash is the keyed hash a subject index holds for value.
func SubjectHash(key []byte, value string) string {
	return strings.TrimPrefix(HashValue(key, "subject\x00"+NormalizeSubject(value)), "hash:")
}

// subjectsOf returns the hashes of the subject values of m, each once.
func (c *Compiled) subjectsOf(m *domain.Message) []string {
	if len(c.subjects) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(value string) {
		if NormalizeSubject(value) == "" {
			return
		}
		if h := SubjectHash(c.hashKey, value); !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	copy := m.Clone() // the walk writes back; subjects only read
	walkMessage(&copy, func(l *location, value string) (string, bool) {
		for i := range c.subjects {
			k := &c.subjects[i]
			for j := range k.selectors {
				if k.selectors[j].matches(l) {
					add(value)
				}
			}
			if k.detector != nil {
				for _, span := range k.detector.find(value) {
					add(value[span[0]:span[1]])
				}
			}
		}
		return value, false
	}, func(side) bool { return false })
	return out
}

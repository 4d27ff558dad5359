package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// RuleSet is an account's rules, as the API and the rules file hold them.
type RuleSet struct {
	Privacy   []PrivacyRule   `json:"privacy,omitempty"`
	Ingest    []IngestRule    `json:"ingest,omitempty"`
	Retention []RetentionRule `json:"retention,omitempty"`
	Subjects  []SubjectKey    `json:"subjects,omitempty"`
}

// Scope narrows a rule to some exchanges; an empty list does not narrow.
type Scope struct {
	Domains      []string `json:"domains,omitempty"`      // live, test
	Applications []string `json:"applications,omitempty"` // exact names
	Methods      []string `json:"methods,omitempty"`
	// Paths and Routes are globs: * within a segment, ** across segments.
	Paths   []string `json:"paths,omitempty"`
	Routes  []string `json:"routes,omitempty"`
	Sources []Source `json:"sources,omitempty"`
}

// Source is what captured an exchange.
type Source string

// The sources of exchanges.
const (
	SourceAPI   Source = "api"   // POST /v1/messages, the Go client, capture middleware
	SourceProxy Source = "proxy" // the capturing proxy
	SourceOTLP  Source = "otlp"  // the OpenTelemetry receiver
)

// Mode says whether a rule acts or only counts what it would do.
type Mode string

// The modes of a rule; "" is ModeEnforce.
const (
	ModeEnforce Mode = "enforce"
	ModeDryRun  Mode = "dry_run"
)

// PrivacyRule scrubs what its selectors pick and its match finds.
type PrivacyRule struct {
	ID     string   `json:"id"`
	Scope  Scope    `json:"scope"`
	Select []string `json:"select"`
	Except []string `json:"except,omitempty"`
	Match  Match    `json:"match"`
	Action Action   `json:"action"`
	Mode   Mode     `json:"mode,omitempty"`
}

// Match is what a privacy rule looks for in a selected value: the whole value
// when neither is set, else every match of Pattern (RE2; of its Group when
// given) or of Detector.
type Match struct {
	Pattern  string `json:"pattern,omitempty"`
	Group    int    `json:"group,omitempty"`
	Detector string `json:"detector,omitempty"`
}

// Action is what a privacy rule does to a match.
type Action struct {
	Type      string `json:"type"` // mask, replace, hash, remove, partial, keep_scheme
	With      string `json:"with,omitempty"`
	KeepFirst int    `json:"keep_first,omitempty"`
	KeepLast  int    `json:"keep_last,omitempty"`
}

// The privacy actions.
const (
	ActionMask       = "mask"
	ActionReplace    = "replace"
	ActionHash       = "hash"
	ActionRemove     = "remove"
	ActionPartial    = "partial"
	ActionKeepScheme = "keep_scheme"
)

// IngestRule decides whether an exchange is stored, on its metadata.
type IngestRule struct {
	ID    string `json:"id"`
	Scope Scope  `json:"scope"`
	// Status is a list of codes, classes or ranges: "404", "5xx", "400-403".
	Status        []string  `json:"status,omitempty"`
	MinDurationMS *float64  `json:"min_duration_ms,omitempty"`
	MaxDurationMS *float64  `json:"max_duration_ms,omitempty"`
	Header        *HeaderIs `json:"header,omitempty"`
	Action        string    `json:"action"` // keep, drop, sample, strip_bodies
	SampleRate    int       `json:"sample_rate,omitempty"`
	Mode          Mode      `json:"mode,omitempty"`
}

// HeaderIs matches a request header's presence, or one of its values.
type HeaderIs struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
}

// The ingest actions.
const (
	IngestKeep        = "keep"
	IngestDrop        = "drop"
	IngestSample      = "sample"
	IngestStripBodies = "strip_bodies"
)

// RetentionRule keeps the messages it scopes (by application and route) for
// Keep, and their bodies for Bodies (at most Keep); durations as "7d", "36h".
type RetentionRule struct {
	ID     string `json:"id"`
	Scope  Scope  `json:"scope"`
	Keep   string `json:"keep"`
	Bodies string `json:"bodies,omitempty"`
}

// SubjectKey names the values that identify an end user: what its selectors
// pick, or what Detector finds anywhere.
type SubjectKey struct {
	ID       string   `json:"id"`
	Select   []string `json:"select,omitempty"`
	Detector string   `json:"detector,omitempty"`
}

// Bounds of a rule set, so that one account cannot make every write slow.
const (
	MaxRules         = 256 // of each kind
	MaxSubjectKeys   = 16
	MaxPatternLength = 1024
	// maxPatternInsts bounds a compiled pattern's program: Go's regexp runs
	// in time linear in the input, but its memory and constant grow with it.
	maxPatternInsts = 5000
	MaxSampleRate   = 1_000_000
	MaxIDLength     = 64
	maxListItems    = 64
	maxRetention    = 10 * 366 * 24 * time.Hour
)

// Parse reads a rule set from JSON, refusing unknown fields.
func Parse(data []byte) (RuleSet, error) {
	var rs RuleSet
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return RuleSet{}, &domain.ValidationError{Message: "the rule set is not valid JSON of a rule set: " + err.Error()}
	}
	if dec.More() {
		return RuleSet{}, &domain.ValidationError{Message: "the rule set is followed by more JSON"}
	}
	return rs, nil
}

// Encode is rs as the JSON Parse reads, as stores keep it.
func Encode(rs RuleSet) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rs); err != nil {
		return nil, fmt.Errorf("encode the rule set: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Compiled is a rule set ready to apply: every pattern, glob and selector
// built once.
type Compiled struct {
	privacy     []privacyRule
	ingest      []ingestRule
	retention   []retentionRule
	subjects    []subjectKey
	subjectPlan subjectPlan
	hasher      *keyedHash // the hash action's and subject hashes' key
	dispatch    dispatch   // of privacy
}

// Compile checks rs and builds it; hashKey keys the hash action and subject
// hashes (it lives outside the store). The error is a *domain.ValidationError
// naming each field at fault ("privacy[2].match.pattern").
func Compile(rs RuleSet, hashKey []byte) (*Compiled, error) {
	var fe domain.FieldErrors
	c := &Compiled{hasher: newKeyedHash(hashKey)}
	ids := map[string]string{}
	checkID := func(field, id string) {
		switch {
		case id == "":
			fe.Add(field+".id", "is required")
		case len(id) > MaxIDLength || strings.IndexFunc(id, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) >= 0:
			fe.Add(field+".id", "must be 1 to %d letters, digits, '-', '_' or '.'", MaxIDLength)
		case ids[id] != "":
			fe.Add(field+".id", "%q is also the id of %s", id, ids[id])
		default:
			ids[id] = field
		}
	}
	for field, n := range map[string]int{"privacy": len(rs.Privacy), "ingest": len(rs.Ingest), "retention": len(rs.Retention)} {
		if n > MaxRules {
			fe.Add(field, "holds %d rules, more than the %d a rule set may hold of a kind", n, MaxRules)
		}
	}
	if len(fe.List) > 0 {
		return nil, fe.Err("the rule set is too large")
	}
	if len(rs.Subjects) > MaxSubjectKeys {
		fe.Add("subjects", "must be at most %d keys", MaxSubjectKeys)
	}
	for i, r := range rs.Privacy {
		field := fmt.Sprintf("privacy[%d]", i)
		checkID(field, r.ID)
		if p, ok := compilePrivacy(&fe, field, r); ok {
			c.privacy = append(c.privacy, p)
		}
	}
	for i, r := range rs.Ingest {
		field := fmt.Sprintf("ingest[%d]", i)
		checkID(field, r.ID)
		if p, ok := compileIngest(&fe, field, r); ok {
			c.ingest = append(c.ingest, p)
		}
	}
	for i, r := range rs.Retention {
		field := fmt.Sprintf("retention[%d]", i)
		checkID(field, r.ID)
		if p, ok := compileRetention(&fe, field, r); ok {
			c.retention = append(c.retention, p)
		}
	}
	checkRetentionPrecedence(&fe, c.retention)
	for i, k := range rs.Subjects {
		field := fmt.Sprintf("subjects[%d]", i)
		checkID(field, k.ID)
		if p, ok := compileSubject(&fe, field, k); ok {
			c.subjects = append(c.subjects, p)
		}
	}
	if err := fe.Err("the rule set is invalid"); err != nil {
		return nil, err
	}
	c.dispatch = newDispatch(c.privacy)
	c.subjectPlan = planSubjects(c.subjects)
	return c, nil
}

// scope is a compiled Scope.
type scope struct {
	domains, applications, methods []string
	paths, routes                  []*regexp.Regexp
	sources                        []Source
	specificity                    int // retention's precedence: routes 2, applications 1
}

func compileScope(fe *domain.FieldErrors, field string, s Scope) scope {
	out := scope{domains: s.Domains, applications: s.Applications, sources: s.Sources}
	for _, list := range [][]string{s.Domains, s.Applications, s.Methods, s.Paths, s.Routes} {
		if len(list) > maxListItems {
			fe.Add(field+".scope", "lists at most %d items in each list", maxListItems)
			return out
		}
	}
	for i, d := range s.Domains {
		if !domain.ValidDomain(d) {
			fe.Add(fmt.Sprintf("%s.scope.domains[%d]", field, i), "must be live or test")
		}
	}
	for _, m := range s.Methods {
		out.methods = append(out.methods, strings.ToUpper(m))
	}
	for i, src := range s.Sources {
		if src != SourceAPI && src != SourceProxy && src != SourceOTLP {
			fe.Add(fmt.Sprintf("%s.scope.sources[%d]", field, i), "must be api, proxy or otlp")
		}
	}
	for name, globs := range map[string][]string{"paths": s.Paths, "routes": s.Routes} {
		for i, g := range globs {
			re, err := compileGlob(g)
			if err != nil {
				fe.Add(fmt.Sprintf("%s.scope.%s[%d]", field, name, i), "%s", err)
				continue
			}
			if name == "paths" {
				out.paths = append(out.paths, re)
			} else {
				out.routes = append(out.routes, re)
			}
		}
	}
	switch {
	case len(s.Routes) > 0 || len(s.Paths) > 0:
		out.specificity = 2
	case len(s.Applications) > 0:
		out.specificity = 1
	}
	return out
}

// compileGlob turns a path glob into an anchored pattern: * is any run within
// a segment, ** any run across them, ? one character of a segment.
func compileGlob(glob string) (*regexp.Regexp, error) {
	if !strings.HasPrefix(glob, "/") || len(glob) > domain.MaxRouteLength*4 {
		return nil, fmt.Errorf("must be a glob starting with / of at most %d bytes", domain.MaxRouteLength*4)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case glob[i] == '*':
			b.WriteString("[^/]*")
		case glob[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// matches reports whether the scope holds m, captured by src.
func (s *scope) matches(m *domain.Message, src Source) bool {
	if len(s.domains) > 0 && !slices.Contains(s.domains, m.Domain) ||
		len(s.applications) > 0 && !slices.Contains(s.applications, m.Name) ||
		len(s.methods) > 0 && !slices.Contains(s.methods, m.Method) ||
		len(s.sources) > 0 && !slices.Contains(s.sources, src) {
		return false
	}
	if len(s.paths) > 0 {
		path, _, _ := strings.Cut(m.Path, "?")
		if !slices.ContainsFunc(s.paths, func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
			return false
		}
	}
	if len(s.routes) > 0 && !slices.ContainsFunc(s.routes, func(re *regexp.Regexp) bool { return re.MatchString(m.Route) }) {
		return false
	}
	return true
}

func compileMode(fe *domain.FieldErrors, field string, m Mode) bool {
	switch m {
	case "", ModeEnforce:
		return false
	case ModeDryRun:
		return true
	}
	fe.Add(field+".mode", "must be enforce or dry_run")
	return false
}

// compilePattern builds an RE2 pattern, refusing one too large to run on
// every write.
func compilePattern(fe *domain.FieldErrors, field, pattern string) *regexp.Regexp {
	if len(pattern) > MaxPatternLength {
		fe.Add(field, "must be at most %d bytes", MaxPatternLength)
		return nil
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		fe.Add(field, "is not an RE2 pattern: %s", err)
		return nil
	}
	if prog, err := syntax.Compile(parsed.Simplify()); err != nil || len(prog.Inst) > maxPatternInsts {
		fe.Add(field, "is too large a pattern (over %d instructions once compiled)", maxPatternInsts)
		return nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		fe.Add(field, "is not an RE2 pattern: %s", err)
		return nil
	}
	return re
}

// literal is a text every match of a pattern holds: exactly, or ignoring
// ASCII case (fold).
type literal struct {
	text string
	fold bool
}

// patternNeeds is the least counts of the bytes textCounts counts that every
// match of pattern holds, found in its syntax (a digit class, a capital not
// folded, one of the punctuation bytes counted), so that a value whose counts
// fall short is spared the pattern. Zero when the pattern cannot be parsed.
func patternNeeds(pattern string) textCounts {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return textCounts{}
	}
	return syntaxNeeds(parsed)
}

func syntaxNeeds(re *syntax.Regexp) textCounts {
	var n textCounts
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r < 0x80 && (re.Flags&syntax.FoldCase == 0 || byteKind[r] != kindUpper) {
				n.add(byteKind[r], 1)
			}
		}
	case syntax.OpCharClass:
		if kind, ok := classKind(re.Rune); ok {
			n.add(kind, 1)
		}
	case syntax.OpCapture, syntax.OpPlus:
		n = syntaxNeeds(re.Sub[0])
	case syntax.OpRepeat:
		n = syntaxNeeds(re.Sub[0]).times(re.Min)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			n = n.plus(syntaxNeeds(sub))
		}
	case syntax.OpAlternate:
		for i, sub := range re.Sub {
			if i == 0 {
				n = syntaxNeeds(sub)
			} else {
				n = n.least(syntaxNeeds(sub))
			}
		}
	}
	return n
}

// classKind is the kind of byte every rune of the class ranges holds, if
// one: [0-9], [A-Z] or a punctuation byte textCounts counts.
func classKind(ranges []rune) (uint8, bool) {
	if len(ranges) == 0 || ranges[len(ranges)-1] >= 0x80 {
		return kindOther, false
	}
	kind := byteKind[ranges[0]]
	for i := 0; i < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if byteKind[r] != kind {
				return kindOther, false
			}
		}
	}
	return kind, kind != kindOther
}

// requiredLiteral is the longest literal every match of pattern holds, found
// in its syntax (a literal of a concatenation, a group, a repetition of at
// least one); its text is "" when there is none. A case-folded one is kept
// only when it is ASCII: (?i)s also matches ſ, so a folded literal rules out
// ASCII values alone (holds).
func requiredLiteral(pattern string) literal {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return literal{}
	}
	var longest func(re *syntax.Regexp) literal
	longest = func(re *syntax.Regexp) literal {
		switch re.Op {
		case syntax.OpLiteral:
			lit := literal{text: string(re.Rune), fold: re.Flags&syntax.FoldCase != 0}
			if lit.fold && !isASCII(lit.text) {
				return literal{}
			}
			return lit
		case syntax.OpCapture, syntax.OpPlus:
			return longest(re.Sub[0])
		case syntax.OpRepeat:
			if re.Min >= 1 {
				return longest(re.Sub[0])
			}
		case syntax.OpConcat:
			var best literal
			for _, sub := range re.Sub {
				if lit := longest(sub); len(lit.text) > len(best.text) {
					best = lit
				}
			}
			return best
		}
		return literal{}
	}
	return longest(parsed.Simplify())
}

// holds reports whether value may hold a match of the literal's pattern:
// false only when it surely holds none.
func (l literal) holds(value string) bool {
	switch {
	case l.text == "":
		return true
	case !l.fold:
		return strings.Contains(value, l.text)
	case foldsToASCII(value):
		return true // a non-ASCII letter may fold to the literal's
	}
	return containsFold(value, l.text)
}

// asciiFolds are the non-ASCII letters that fold to ASCII ones (K to k, ſ
// to s), encoded: a text holding none of them holds a match of a folded
// ASCII literal only in ASCII bytes.
var asciiFolds = func() (out []string) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf && !slices.Contains(out, string(f)) {
				out = append(out, string(f))
			}
		}
	}
	return out
}()

// foldsToASCII reports whether value holds a letter of asciiFolds.
func foldsToASCII(value string) bool {
	for _, f := range asciiFolds {
		if strings.Contains(value, f) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// parseRetention reads "7d", "36h" or "90m".
func parseRetention(s string) (time.Duration, bool) {
	if len(s) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, false
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute}[s[len(s)-1]]
	if unit == 0 || time.Duration(n) > maxRetention/unit {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// UsesHashKey reports whether rs hashes values (a hash action, subject keys):
// such a set needs the one hash key every replica shares, or equal values
// would stop hashing equal.
func (rs RuleSet) UsesHashKey() bool {
	return len(rs.Subjects) > 0 || slices.ContainsFunc(rs.Privacy, func(r PrivacyRule) bool { return r.Action.Type == ActionHash })
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Shape of the generated traffic: bodies of 200 B to 20 KB (log-uniform, so small
// bodies are common and large ones present), 10 to 30 headers per exchange.
const (
	minBodyBytes = 200
	maxBodyBytes = 20_000
	minHeaders   = 10
	maxHeaders   = 30
)

// applications are the "name"s of generated submissions; fetch filters on them.
var applications = []string{
	"shop-frontend", "checkout", "billing-api", "mobile-ios", "mobile-android",
	"partner-gateway", "search", "inventory", "notifications", "admin-console",
}

// weighted picks a value with probability proportional to its weight.
type weighted[T any] struct {
	values  []T
	weights []int
	total   int
}

func newWeighted[T any](pairs ...any) weighted[T] {
	var w weighted[T]
	for i := 0; i < len(pairs); i += 2 {
		w.values = append(w.values, pairs[i].(T))
		w.weights = append(w.weights, pairs[i+1].(int))
		w.total += pairs[i+1].(int)
	}
	return w
}

func (w weighted[T]) pick(rng *rand.Rand) T {
	n := rng.IntN(w.total)
	for i, weight := range w.weights {
		if n < weight {
			return w.values[i]
		}
		n -= weight
	}
	return w.values[len(w.values)-1]
}

var (
	methods = newWeighted[string]("GET", 55, "POST", 25, "PUT", 6, "PATCH", 5, "DELETE", 6, "HEAD", 2, "OPTIONS", 1)
	codes   = newWeighted[int](200, 62, 201, 9, 204, 4, 301, 1, 304, 3, 400, 5, 401, 3, 403, 2, 404, 5,
		409, 1, 422, 2, 429, 1, 500, 1, 502, 1, 503, 1)
	pathTemplates = []string{
		"/v1/orders/%d", "/v1/orders?page=%d&sort=-created_at", "/v1/users/%d/profile",
		"/v1/products/%d/reviews", "/api/v2/payments/%d/refunds", "/v1/search?q=item%d&limit=20",
		"/v1/carts/%d/items", "/v1/invoices/%d.pdf", "/oauth/token", "/healthz",
	}
	requestHeaderPool = []string{
		"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Connection", "Content-Length",
		"Host", "Origin", "Referer", "User-Agent", "X-Request-Id", "X-Forwarded-For", "X-Forwarded-Proto",
		"X-Correlation-Id", "X-Client-Version", "X-Device-Id", "If-None-Match", "Traceparent", "Tracestate",
		"Sec-Fetch-Mode", "Sec-Fetch-Site", "Dnt", "Priority",
	}
	responseHeaderPool = []string{
		"Cache-Control", "Content-Length", "Date", "Etag", "Expires", "Last-Modified", "Server", "Vary",
		"X-Request-Id", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
		"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "Access-Control-Allow-Origin",
		"Content-Security-Policy", "Referrer-Policy", "Server-Timing", "Via", "Age",
	}
	words = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor
		incididunt ut labore et dolore magna aliqua order customer invoice payment shipped pending refund
		express standard warehouse berlin lisbon tokyo premium basic annual monthly blue green large small`)
	// bodyKeys include a few the default policy redacts, so redaction is exercised.
	bodyKeys = strings.Fields(`id sku name email status quantity price currency total description note
		city country street zip tags items created_at updated_at discount coupon customer_id plan token password`)
)

// Durations of the generated traffic: log-uniform from 1 ms to 2 s, to the
// microsecond; one exchange in durationUnknown has none.
const (
	minDurationMS   = 1
	maxDurationMS   = 2000
	durationUnknown = 10
)

// rareToken is what the search workload looks for: seed plants it in one message
// in -rare. It is one word under UAX #29 (letters, digits, an underscore), found
// by every store, and no other generated text holds it: random tokens have no
// underscore, and body words and keys are lower-case dictionary words.
const rareToken = "ord_zq7x3k9w"

// submission is one generated exchange in the contract's JSON shape.
type submission struct {
	Name       string      `json:"name"`
	CreatedAt  int64       `json:"created_at"` // Unix milliseconds
	IPAddress  string      `json:"ip_address,omitempty"`
	Method     string      `json:"method"`
	Path       string      `json:"path"`
	DurationMS json.Number `json:"duration_ms,omitempty"`
	Request    side        `json:"request"`
	Response   side        `json:"response"`
}

type side struct {
	Header     map[string]any `json:"header"`
	Body       string         `json:"body"`
	StatusCode int            `json:"status_code,omitempty"`
}

// generator makes a reproducible stream of submissions from its seed.
type generator struct {
	rng *rand.Rand
}

func newGenerator(seed uint64) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// pathOf fills template's id; "/healthz" and "/oauth/token" have none, and
// were sent as "/healthz%!(EXTRA int=…)", one distinct path per message, until
// the statistics at 1,000,000 showed it.
func pathOf(template string, id int) string {
	if !strings.Contains(template, "%d") {
		return template
	}
	return fmt.Sprintf(template, id)
}

// submission returns a new exchange created at createdAt.
func (g *generator) submission(createdAt time.Time) submission {
	r := g.rng
	method := methods.pick(r)
	code := codes.pick(r)
	s := submission{
		Name:      applications[r.IntN(len(applications))],
		CreatedAt: createdAt.UnixMilli(),
		Method:    method,
		Path:      pathOf(pathTemplates[r.IntN(len(pathTemplates))], r.IntN(100_000)),
		Response:  side{StatusCode: code},
	}
	if r.IntN(10) > 0 {
		s.IPAddress = g.ip()
	}
	if r.IntN(durationUnknown) > 0 {
		micros := g.logUniform(minDurationMS*1000, maxDurationMS*1000)
		s.DurationMS = json.Number(domain.FormatDurationMS(time.Duration(micros) * time.Microsecond))
	}
	total := g.logUniform(minBodyBytes, maxBodyBytes)
	hasRequestBody := method == "POST" || method == "PUT" || method == "PATCH"
	hasResponseBody := method != "HEAD" && code != 204 && code != 304
	switch {
	case hasRequestBody && hasResponseBody:
		s.Request.Body = g.jsonBody(total * 3 / 10)
		s.Response.Body = g.jsonBody(total - total*3/10)
	case hasRequestBody:
		s.Request.Body = g.jsonBody(total)
	case hasResponseBody:
		s.Response.Body = g.jsonBody(total)
	}
	headers := minHeaders + r.IntN(maxHeaders-minHeaders+1)
	inRequest := headers / 2
	s.Request.Header = g.headers(requestHeaderPool, inRequest, s.Request.Body != "")
	s.Response.Header = g.headers(responseHeaderPool, headers-inRequest, s.Response.Body != "")
	if r.IntN(10) < 7 {
		s.Request.Header["Authorization"] = "Bearer sk_live_" + g.token(24)
	}
	if r.IntN(10) < 2 {
		s.Request.Header["Cookie"] = "session=" + g.token(32) + "; theme=dark"
		s.Response.Header["Set-Cookie"] = []string{"session=" + g.token(32) + "; Path=/; HttpOnly", "seen=1"}
	}
	return s
}

// seedSubmission is message i (from 0) of a seed: created within spread before
// now, and carrying rareToken when i is a multiple of rare.
func (g *generator) seedSubmission(i int, now time.Time, spread time.Duration, rare int) submission {
	s := g.submission(now.Add(-time.Duration(g.rng.Int64N(int64(spread)))))
	if i%rare == 0 {
		s.plant(rareToken)
	}
	return s
}

// generate writes the o.n submissions a seed at now would send (o.spread,
// o.rare), one JSON object a line.
func (g *generator) generate(o options, now time.Time, w io.Writer) error {
	out := bufio.NewWriter(w)
	for i := range o.n {
		line, err := json.Marshal(g.seedSubmission(i, now, o.spread, o.rare))
		if err != nil {
			return err
		}
		if _, err := out.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return out.Flush()
}

// plant puts token in s where a support team would look for an order id: a
// field of the response body, or a response header when there is no body.
func (s *submission) plant(token string) {
	field := `"order_ref":"` + token + `"`
	switch body := s.Response.Body; {
	case body == "" || body[0] != '{':
		s.Response.Header["X-Order-Ref"] = token
	case strings.TrimSpace(body[1:]) == "}":
		s.Response.Body = "{" + field + "}"
	default:
		s.Response.Body = "{" + field + "," + body[1:]
	}
}

// headers picks n distinct names from pool (Content-Type first when there is a body).
func (g *generator) headers(pool []string, n int, hasBody bool) map[string]any {
	h := make(map[string]any, n+2)
	if hasBody {
		h["Content-Type"] = "application/json; charset=utf-8"
		n--
	}
	for _, i := range g.rng.Perm(len(pool))[:min(max(n, 0), len(pool))] {
		name := pool[i]
		if g.rng.IntN(8) == 0 {
			h[name] = []any{g.headerValue(name), g.headerValue(name)}
		} else {
			h[name] = g.headerValue(name)
		}
	}
	return h
}

func (g *generator) headerValue(name string) string {
	r := g.rng
	switch name {
	case "User-Agent":
		return "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0." + strconv.Itoa(r.IntN(9999)) + " Safari/537.36"
	case "Content-Length", "Age", "X-Ratelimit-Limit", "X-Ratelimit-Remaining":
		return strconv.Itoa(r.IntN(20_000))
	case "Date", "Expires", "Last-Modified":
		return time.Unix(1_700_000_000+r.Int64N(50_000_000), 0).UTC().Format(time.RFC1123)
	case "X-Forwarded-For":
		return g.ip() + ", " + g.ip()
	default:
		return g.token(8 + r.IntN(40))
	}
}

func (g *generator) ip() string {
	r := g.rng
	if r.IntN(5) == 0 {
		var a [16]byte
		for i := range a {
			a[i] = byte(r.IntN(256))
		}
		a[0], a[1] = 0x20, 0x01
		return netip.AddrFrom16(a).String()
	}
	return netip.AddrFrom4([4]byte{byte(1 + r.IntN(223)), byte(r.IntN(256)), byte(r.IntN(256)), byte(1 + r.IntN(254))}).String()
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (g *generator) token(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = tokenAlphabet[g.rng.IntN(len(tokenAlphabet))]
	}
	return string(b)
}

func (g *generator) logUniform(lo, hi int) int {
	return int(math.Exp(math.Log(float64(lo)) + g.rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
}

// jsonBody returns a JSON object of about size bytes (never less than 2).
func (g *generator) jsonBody(size int) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; b.Len() < size-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(bodyKeys[g.rng.IntN(len(bodyKeys))] + "_" + strconv.Itoa(i))
		b.Write(key)
		b.WriteByte(':')
		g.jsonValue(&b, 2, size-b.Len())
	}
	b.WriteByte('}')
	return b.String()
}

func (g *generator) jsonValue(b *bytes.Buffer, depth, room int) {
	r := g.rng
	kind := r.IntN(10)
	switch {
	case kind < 3:
		b.WriteString(strconv.Itoa(r.IntN(1_000_000)))
	case kind < 4:
		b.WriteString(strconv.FormatFloat(float64(r.IntN(100_000))/100, 'f', 2, 64))
	case kind < 5:
		b.WriteString(strconv.FormatBool(r.IntN(2) == 0))
	case kind < 8 || depth == 0 || room < 200:
		n := 1 + r.IntN(12)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = words[r.IntN(len(words))]
		}
		text, _ := json.Marshal(strings.Join(parts, " "))
		b.Write(text)
	case kind < 9:
		b.WriteByte('[')
		for i := range 1 + r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			g.jsonValue(b, depth-1, room/4)
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		for i := range 1 + r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(bodyKeys[r.IntN(len(bodyKeys))])
			b.Write(key)
			b.WriteByte(':')
			g.jsonValue(b, depth-1, room/5)
		}
		b.WriteByte('}')
	}
}

// body encodes items as a POST body: the object itself for one, an array otherwise.
func body(items []submission) []byte {
	var v any = items
	if len(items) == 1 {
		v = items[0]
	}
	raw, err := json.Marshal(v)
	if err != nil {
		panic("reqlog-bench: a generated submission does not encode: " + err.Error()) // a bug here
	}
	return raw
}

// pool pre-generates n POST bodies of items submissions each, created at now, so
// that generating traffic costs nothing during an attack.
func (g *generator) pool(n, items int, now time.Time) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		batch := make([]submission, items)
		for j := range batch {
			batch[j] = g.submission(now)
		}
		bodies[i] = body(batch)
	}
	return bodies
}

// fileBodies is the one POST body of items copies of the submission in path
// (a JSON object), an array when items > 1.
func fileBodies(path string, items int) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-body: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	var object map[string]any
	if err := json.Unmarshal(raw, &object); err != nil {
		return nil, fmt.Errorf("-body %s: not one JSON object: %w", path, err)
	}
	if items == 1 {
		return [][]byte{raw}, nil
	}
	copies := make([][]byte, items)
	for i := range copies {
		copies[i] = raw
	}
	return [][]byte{append(append([]byte{'['}, bytes.Join(copies, []byte{','})...), ']')}, nil
}

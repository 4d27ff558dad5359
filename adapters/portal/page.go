package portal

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// PagePath is where the page is served; its assets are served under PagePath + "/".
const PagePath = "/portal"

//go:embed assets/index.html assets/app.js assets/app.css assets/uplot
var assetFS embed.FS

// asset is one embedded file of the page, with its gzip encoding made once at
// start-up (the page and its chart library weigh a third as much compressed).
type asset struct {
	contentType string
	content     []byte
	gzipped     []byte
}

// assets maps paths under PagePath to files; "" is the page itself.
var assets = func() map[string]asset {
	read := func(name, contentType string) asset {
		content, err := assetFS.ReadFile("assets/" + name)
		if err != nil {
			panic("portal: missing embedded asset " + name) // caught by every test
		}
		return asset{contentType: contentType, content: content, gzipped: gzipBytes(content)}
	}
	return map[string]asset{
		"":         read("index.html", "text/html; charset=utf-8"),
		"/app.js":  read("app.js", "text/javascript; charset=utf-8"),
		"/app.css": read("app.css", "text/css; charset=utf-8"),
		// uPlot, vendored unmodified (assets/uplot/VERSION says which release).
		"/uplot.js":      read("uplot/uPlot.iife.min.js", "text/javascript; charset=utf-8"),
		"/uplot.css":     read("uplot/uPlot.min.css", "text/css; charset=utf-8"),
		"/uplot-LICENSE": read("uplot/LICENSE", "text/plain; charset=utf-8"),
	}
}()

func gzipBytes(content []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(content)                                 // writes to memory cannot fail
	_ = zw.Close()
	return buf.Bytes()
}

// acceptsGzip reports whether the request's Accept-Encoding lists gzip without
// refusing it (q=0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			weight, found := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			if !found {
				return true
			}
			q, err := strconv.ParseFloat(weight, 64)
			return err == nil && q > 0
		}
	}
	return false
}

// Serves reports whether ServeHTTP has a file for path: PagePath or one of its
// assets.
func Serves(path string) bool {
	rest, under := strings.CutPrefix(path, PagePath)
	_, ok := assets[rest]
	return under && ok
}

// ServeHTTP serves the page at PagePath and its assets under it. The policy lets
// the page load only its own script and style and talk only to its own origin; no
// inline script runs, and only FrameAncestors may frame it.
func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !Serves(r.URL.Path) {
		http.NotFound(w, r)
		return
	}
	a := assets[strings.TrimPrefix(r.URL.Path, PagePath)]
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Security-Policy", p.csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		_, _ = w.Write(a.gzipped)
		return
	}
	_, _ = w.Write(a.content)
}

// frameSource is one CSP source expression: 'self', 'none', *, a scheme (https:)
// or a host source ([scheme://]host[:port][/path], host possibly *.example.com).
var frameSource = regexp.MustCompile(`^(?:'self'|'none'|\*|[a-zA-Z][a-zA-Z0-9+.-]*:|` +
	`(?:[a-zA-Z][a-zA-Z0-9+.-]*://)?(?:\*|(?:\*\.)?[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*|\[[0-9a-fA-F:.]+\])` +
	`(?::(?:[0-9]{1,5}|\*))?(?:/[^\s;,'"]*)?)$`)

// contentSecurityPolicy is the page's policy with frame-ancestors set to sources
// (nil: 'self'). Items may hold several sources separated by spaces.
func contentSecurityPolicy(sources []string) (string, error) {
	var list []string
	for _, item := range sources {
		list = append(list, strings.Fields(item)...)
	}
	if len(list) == 0 {
		list = []string{"'self'"}
	}
	for _, s := range list {
		if !frameSource.MatchString(s) {
			return "", errors.New(s + " must be 'self', 'none', a scheme such as https: or an origin such as https://app.example.com")
		}
		if s == "'none'" && len(list) > 1 {
			return "", errors.New("'none' cannot be combined with other sources")
		}
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors " + strings.Join(list, " "), nil
}

package portal_test

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/adapters/portal"
)

// fetch gets path from p's ServeHTTP.
func fetch(t *testing.T, p *portal.Portal, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

// The page's promises that a browser test cannot see at a glance: no inline
// script or style (the policy would block them anyway), nothing from another
// origin, and no HTML built from strings.
func TestPageAssetsAreSelfContained(t *testing.T) {
	p, _ := newPortal(t, portal.Config{})
	_, html := fetch(t, p, "/portal")
	_, js := fetch(t, p, "/portal/app.js")
	_, css := fetch(t, p, "/portal/app.css")
	for name, content := range map[string]string{"index.html": html, "app.js": js, "app.css": css} {
		if len(content) < 100 {
			t.Fatalf("%s is missing or empty: %q", name, content)
		}
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(content); m != "" {
			t.Errorf("%s refers to another origin: %q", name, m)
		}
	}
	if m := regexp.MustCompile(`@import|url\(`).FindString(css); m != "" {
		t.Errorf("app.css loads another resource: %q", m)
	}
	for _, m := range regexp.MustCompile(`(?is)<script\b[^>]*>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if strings.TrimSpace(m[1]) != "" || !strings.Contains(m[0], `src="portal/app.js"`) && !strings.Contains(m[0], `src="portal/uplot.js"`) {
			t.Errorf("inline or unexpected script: %q", m[0])
		}
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|<style`).FindString(html); m != "" {
		t.Errorf("index.html has inline handlers or styles: %q", m)
	}
	if m := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`).FindString(js); m != "" {
		t.Errorf("app.js builds HTML or code from strings: %q", m)
	}
}

func TestServeHTTP(t *testing.T) {
	p, _ := newPortal(t, portal.Config{FrameAncestors: []string{"https://app.example.com"}})
	resp, _ := fetch(t, p, "/portal")
	want := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors https://app.example.com"
	if got := resp.Header.Get("Content-Security-Policy"); got != want {
		t.Errorf("policy\n %s\nwant\n %s", got, want)
	}
	for _, path := range []string{"/portal/", "/portal/index.html", "/portalx", "/other/app.js", "/portal/assets/app.js"} {
		if resp, _ := fetch(t, p, path); resp.StatusCode != http.StatusNotFound || portal.Serves(path) {
			t.Errorf("%s: %d (Serves %v), want 404", path, resp.StatusCode, portal.Serves(path))
		}
	}
}

// Browsers that accept gzip get the precompressed asset; others the plain one.
// The whole page, chart library included, stays under 150 KB compressed.
func TestServesGzip(t *testing.T) {
	p, _ := newPortal(t, portal.Config{})
	total := 0
	for _, path := range []string{"/portal", "/portal/app.js", "/portal/app.css", "/portal/uplot.js", "/portal/uplot.css"} {
		plain, body := fetch(t, p, path)
		if plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s without Accept-Encoding: %v", path, plain.Header)
		}
		for accept, want := range map[string]bool{"gzip, deflate, br": true, "br;q=1.0, gzip;q=0.5": true, "gzip;q=0": false, "identity": false} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Accept-Encoding", accept)
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding") == "gzip"; got != want {
				t.Errorf("%s with %q: gzip %v, want %v", path, accept, got, want)
				continue
			}
			if !want {
				continue
			}
			if accept == "gzip, deflate, br" {
				total += rec.Body.Len()
			}
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil || string(unzipped) != body {
				t.Errorf("%s: the gzipped body does not decode to the plain one (%v)", path, err)
			}
		}
	}
	if total >= 150_000 {
		t.Errorf("the page weighs %d bytes compressed, want under 150 KB", total)
	}
	t.Logf("page weight, gzip: %d bytes", total)
}

// The vendored chart library is the release its VERSION file names, unmodified.
func TestVendoredUPlotIsUnmodified(t *testing.T) {
	version, err := os.ReadFile("assets/uplot/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	sums := regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+)$`).FindAllStringSubmatch(string(version), -1)
	if len(sums) != 3 {
		t.Fatalf("VERSION lists %d checksums, want 3 (script, style, licence)", len(sums))
	}
	for _, m := range sums {
		content, err := os.ReadFile(filepath.Join("assets/uplot", m[2]))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(content)); got != m[1] {
			t.Errorf("%s: sha256 %s, VERSION says %s", m[2], got, m[1])
		}
	}
	p, _ := newPortal(t, portal.Config{})
	for path, want := range map[string]string{"/portal/uplot.js": "uPlot", "/portal/uplot.css": ".uplot", "/portal/uplot-LICENSE": "MIT"} {
		if resp, body := fetch(t, p, path); resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d, %.60q", path, resp.StatusCode, body)
		}
	}
}

package domain

import (
	"fmt"
	"mime"
	"net/textproto"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The domain may not import net/textproto, so prove it agrees with it.
func TestCanonicalHeaderNameMatchesTextproto(t *testing.T) {
	for _, name := range []string{"content-type", "CONTENT-TYPE", "x-api-key", "X-API-KEY", "www-authenticate",
		"a", "-x-", "x--y", "accept-encoding", "dnt", "X_Under_score", "foo.bar", "1-a", "Ä"} {
		if !IsToken(name) {
			continue
		}
		if got, want := CanonicalHeaderName(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("CanonicalHeaderName(%q) = %q, textproto says %q", name, got, want)
		}
	}
}

func FuzzCanonicalHeaderName(f *testing.F) {
	for _, seed := range []string{"content-type", "X-API-KEY", "a-b-c", "~!#"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !IsToken(name) {
			return
		}
		if got, want := CanonicalHeaderName(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("CanonicalHeaderName(%q) = %q, textproto says %q", name, got, want)
		}
	})
}

func TestMaskingIsConfigurable(t *testing.T) {
	p := DefaultPolicy()
	p.MaskedHeaders = []string{"x-secret"}
	b, err := p.parse([]byte(validItem("request", `{"header":{"X-Secret":"s","Authorization":"kept"}}`)), testNow)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Submissions[0].Request.Header
	if h["X-Secret"][0] != Mask || h["Authorization"][0] != "kept" {
		t.Errorf("header = %v: want only X-Secret masked", h)
	}
}

// A header reaches CGI, Rack, Django and PHP applications with '_' read as '-',
// so X_Api_Key is an API key there: masked names match with '_' as '-', in any
// case, and the name is kept as sent.
func TestMaskingReadsUnderscoresAsDashes(t *testing.T) {
	p := DefaultPolicy()
	p.MaskedHeaders = append(p.MaskedHeaders, "My_Token")
	b, err := p.parse([]byte(validItem("request",
		`{"header":{"X_Api_Key":"s1","x_API_key":"s2","SET_COOKIE":"s3","proxy_authorization":"s4","my-token":"s5",`+
			`"X_Visible":"kept","X_Api_Keys":"kept"}}`)), testNow)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Submissions[0].Request.Header
	for _, name := range []string{"X_api_key", "Set_cookie", "Proxy_authorization", "My-Token"} {
		if values := h[name]; len(values) == 0 || slices.ContainsFunc(values, func(v string) bool { return v != Mask }) {
			t.Errorf("%s = %q, want every value masked (header %v)", name, values, h)
		}
	}
	for _, name := range []string{"X_visible", "X_api_keys"} {
		if values := h[name]; len(values) != 1 || values[0] != "kept" {
			t.Errorf("%s = %q, want kept", name, values)
		}
	}
}

func TestHeaderMaskKey(t *testing.T) {
	for name, want := range map[string]string{"x_api_key": "X-Api-Key", "X-API-KEY": "X-Api-Key", "Authorization": "Authorization",
		"_a_": "-A-", "a__b": "A--B", "X-Api-Key": "X-Api-Key"} {
		if got := HeaderMaskKey(name); got != want {
			t.Errorf("HeaderMaskKey(%q) = %q, want %q", name, got, want)
		}
	}
}

// A header object's names and values share one string and its values one slice,
// so decoding allocates per object, not per header: a queued or stored message
// then holds a few objects for the garbage collector to mark, not four per header.
func TestHeaderAllocationsDoNotGrowPerHeader(t *testing.T) {
	p := DefaultPolicy()
	allocs := func(headers int) float64 {
		fields := make([]string, headers)
		for i := range fields {
			fields[i] = fmt.Sprintf(`"x-field-%d":["value %d","caf\u00e9",%d]`, i, i, i)
		}
		body := []byte(validItem("request", `{"header":{`+strings.Join(fields, ",")+`}}`))
		// Many runs: under -race sync.Pool drops a share of what it is
		// given at random, which twenty runs did not average out.
		return testing.AllocsPerRun(400, func() {
			if _, err := p.parse(body, testNow); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(10), allocs(60)
	if many-few > 10 {
		t.Errorf("a submission with 60 headers allocates %.0f times, with 10 %.0f: want the same but for the map's size", many, few)
	}
}

// A masked value is decoded apart and dropped by masking: a kept header holds
// neither the secret nor room for it, however long it was.
func TestMaskedHeaderValuesAreNotKept(t *testing.T) {
	secret := strings.Repeat("s", 1<<20)
	body := []byte(validItem("request", `{"header":{"Cookie":"`+secret+`","X-Small":"v"}}`))
	kept := make([]Header, 16)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		b, err := DefaultPolicy().parse(body, testNow)
		if err != nil {
			t.Fatal(err)
		}
		kept[i] = b.Submissions[0].Request.Header
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("%d kept headers hold %d KiB more heap: the masked values' 1 MiB each stayed", len(kept), grown>>10)
	}
	if got := kept[0]["Cookie"]; len(got) != 1 || got[0] != Mask {
		t.Errorf("Cookie = %.20q, want it masked", got)
	}
	runtime.KeepAlive(kept)
}

// HeaderMaskKey is textproto's canonical form of the name with '_' as '-', and
// masks agrees with it on every canonical name.
func FuzzHeaderMaskKey(f *testing.F) {
	for _, seed := range []string{"x_api_key", "X-API-KEY", "_a_", "a__b", strings.Repeat("a_", 40)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !IsToken(name) {
			return
		}
		key := HeaderMaskKey(name)
		if want := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-")); key != want {
			t.Fatalf("HeaderMaskKey(%q) = %q, want %q", name, key, want)
		}
		canonical := CanonicalHeaderName(name)
		if !masks(map[string]bool{key: true}, canonical) || !masks(map[string]bool{key: true}, []byte(canonical)) {
			t.Fatalf("masks does not find %q (canonical %q) under its key %q", name, canonical, key)
		}
	})
}

// mediaType is what mime.ParseMediaType makes of a value it parses, and the
// value cut at ';' otherwise, as the contentType of a body has always been.
func FuzzMediaType(f *testing.F) {
	for _, seed := range []string{"application/json; charset=utf-8", " Text/HTML ;q=1", "APPLICATION/X-WWW-FORM-URLENCODED",
		"text/plain; charset", "multipart/form-data; boundary=\"a;b\"", "not a type", ";", "\u00a0text/plain", "\xff/\xfe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		want, _, err := mime.ParseMediaType(value)
		if err != nil {
			before, _, _ := strings.Cut(value, ";")
			want = strings.ToLower(strings.TrimSpace(before))
		}
		if got := mediaType(value); got != want {
			t.Fatalf("mediaType(%q) = %q, want %q", value, got, want)
		}
	})
}

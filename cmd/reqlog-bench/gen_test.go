package main

import (
	"bytes"
	"testing"
	"time"
)

// The generated traffic is reproducible from its seed, valid for the service's
// policy, and has the shape docs/benchmarks.md promises.
func TestGeneratedSubmissions(t *testing.T) {
	now := time.Now()
	a, b := newGenerator(42).pool(300, 1, now), newGenerator(42).pool(300, 1, now)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("body %d differs between two generators of the same seed", i)
		}
	}
	if bytes.Equal(a[0], newGenerator(43).pool(1, 1, now)[0]) {
		t.Error("another seed gives the same traffic")
	}
	policy := servicePolicy()
	gen := newGenerator(7)
	methods, codes := map[string]bool{}, map[int]bool{}
	var contentBytes, bodyTotal int
	const n = 2000
	for i := range n {
		s := gen.submission(now)
		batch, err := policy.ParseSubmissions(body([]submission{s}), now)
		if err != nil {
			t.Fatalf("submission %d is refused by the service's policy: %v", i, err)
		}
		m := batch.Submissions[0]
		headers := len(m.Request.Header) + len(m.Response.Header)
		if headers < minHeaders || headers > maxHeaders+3 { // + Authorization, Cookie, Set-Cookie
			t.Errorf("submission %d has %d headers, want %d to %d", i, headers, minHeaders, maxHeaders)
		}
		bodies := len(s.Request.Body) + len(s.Response.Body)
		if bodies > maxBodyBytes*11/10 || (bodies != 0 && bodies < minBodyBytes/2) {
			t.Errorf("submission %d has %d bytes of bodies, want %d to %d", i, bodies, minBodyBytes, maxBodyBytes)
		}
		bodyTotal += bodies
		contentBytes += len(body([]submission{s}))
		methods[m.Method], codes[m.StatusCode] = true, true
	}
	if len(methods) < 5 || len(codes) < 10 {
		t.Errorf("%d methods and %d status codes in %d submissions: not a mix", len(methods), len(codes), n)
	}
	t.Logf("average POST body %d bytes, of which bodies %d", contentBytes/n, bodyTotal/n)
}

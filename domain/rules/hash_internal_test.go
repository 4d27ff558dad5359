package rules

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
)

// TestKeyedHashReusesStatesExactly checks the pooled HMAC states against a
// fresh HMAC per value, from goroutines at once: a state reset between
// values must hash as a new one.
func TestKeyedHashReusesStatesExactly(t *testing.T) {
	key := []byte("a key outside the store")
	want := func(text string) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(text))
		return hex.EncodeToString(mac.Sum(nil)[:16])
	}
	k := newKeyedHash(key)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				value := fmt.Sprintf(" User%d@Example.com ", i*7+g)
				if got := k.value(value); got != "hash:"+want(value) {
					t.Errorf("value(%q) = %s, want hash:%s", value, got, want(value))
				}
				if got, w := k.subject(value), want("subject\x00"+NormalizeSubject(value)); got != w {
					t.Errorf("subject(%q) = %s, want %s", value, got, w)
				}
			}
		})
	}
	wg.Wait()
	if HashValue(key, "x") != k.value("x") || SubjectHash(key, "x") != k.subject("x") {
		t.Error("the exported hashes differ from the keyed state's")
	}
}

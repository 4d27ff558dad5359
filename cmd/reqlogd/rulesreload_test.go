package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
)

// A changed rules file is applied within the poll interval, without a
// restart; one that does not load leaves the rules read before; an account
// the file no longer names is ruled by the store again (its API opens).
func TestRulesFileIsReloadedWhenItChanges(t *testing.T) {
	const key = "rk_reload_test_key_1"
	path := writeRulesFile(t, "rules.yaml", "acme:\n  privacy:\n    - {id: first, select: [body], match: {detector: email}, action: {type: mask}}\n")
	var server *httpapi.Server
	startGraph(t, map[string]string{"REQLOG_API_KEYS": "acme:live:" + key, "REQLOG_RULES_FILE": path, "REQLOG_RULES_POLL_INTERVAL": "50ms"}, &server)
	base := "http://" + server.Addr().String()
	type ruleSet struct {
		Data struct {
			Source string
			Rules  struct{ Privacy []struct{ ID string } }
		}
	}
	read := func() (int, ruleSet) {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/rules", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		var got ruleSet
		return call(t, req, &got), got
	}
	waitForRule := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			status, got := read()
			var ids []string
			for _, r := range got.Data.Rules.Privacy {
				ids = append(ids, r.ID)
			}
			if status == http.StatusOK && strings.Join(ids, ",") == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /v1/rules: %d %+v, want the rules %q", status, got, want)
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
	}
	rewrite := func(content string) {
		t.Helper()
		// A new modification time even on a coarse clock: the reload compares it.
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Duration(len(content)) * time.Second)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
	}
	waitForRule("first")

	rewrite("acme:\n  privacy:\n    - {id: second, select: [body], match: {detector: email}, action: {type: mask}}\n")
	waitForRule("second")

	rewrite("acme:\n  privacy:\n    - {id: broken, select: [body], match: {detector: dna}, action: {type: mask}}\n")
	for range 20 { // well past the poll interval: the rules before stay
		if _, got := read(); len(got.Data.Rules.Privacy) != 1 || got.Data.Rules.Privacy[0].ID != "second" {
			t.Fatalf("after a file that does not compile: %+v, want the rules before", got)
		}
		time.Sleep(10 * time.Millisecond) // polling across a few intervals
	}

	rewrite("acme:\n  privacy:\n    - {id: third, select: [body], match: {detector: email}, action: {type: mask}}\n")
	waitForRule("third") // fixed: read again

	rewrite("globex:\n  privacy: []\n")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if status, got := read(); status == http.StatusOK && got.Data.Source != "file" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("acme is still ruled by the file it no longer names")
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

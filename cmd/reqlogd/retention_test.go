package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Retention rules on the default store: a rule over REQLOG_SQLITE_MAX_RETENTION
// is a 400 naming its keep, and the rules running stay; a rule's messages go
// to their class's day file, and their bodies are not returned past the
// rule's bodies retention.
func TestRetentionRulesOnTheSQLiteStore(t *testing.T) {
	dir := t.TempDir()
	r := startDev(t, map[string]string{"REQLOG_SQLITE_DIR": dir, "REQLOG_SQLITE_MAX_RETENTION": "100d"})
	defer r.stop(t)
	put := func(version, doc string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, r.base+"/v1/rules", strings.NewReader(doc))
		req.Header.Set("Authorization", "Bearer "+r.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("If-Match", `"`+version+`"`)
		req.Header.Set("X-Reqlog-Reason", "payments kept apart")
		var reply struct {
			Errors []struct{ Field string }
		}
		status := call(t, req, &reply)
		field := ""
		if len(reply.Errors) > 0 {
			field = reply.Errors[0].Field
		}
		return status, field
	}
	if status, field := put("0", `{"retention": [{"id": "payments", "keep": "101d"}]}`); status != http.StatusBadRequest || field != "retention[0].keep" {
		t.Errorf("a rule over REQLOG_SQLITE_MAX_RETENTION: %d naming %q, want 400 naming retention[0].keep", status, field)
	}
	rule := `{"retention": [{"id": "payments", "scope": {"applications": ["payments"]}, "keep": "7d", "bodies": "1d"}]}`
	if status, field := put("0", rule); status != http.StatusOK {
		t.Fatalf("a valid rule set: %d (%s)", status, field)
	}

	created := time.Now().Add(-50 * time.Hour)
	body := fmt.Sprintf(`{"name":"payments","created_at":%d,"method":"POST","path":"/pay","request":{"body":"card 4111"},"response":{"status_code":201,"body":"paid"}}`,
		created.Unix())
	req, _ := http.NewRequest(http.MethodPost, r.base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	var submitted struct{ Data struct{ ID string } }
	if status := call(t, req, &submitted); status != http.StatusOK {
		t.Fatalf("POST: %d", status)
	}
	req, _ = http.NewRequest(http.MethodGet, r.base+"/v1/messages/"+submitted.Data.ID, nil)
	req.Header.Set("Authorization", "Bearer "+r.key)
	var fetched struct {
		Data struct {
			Request, Response struct{ Body string }
		}
	}
	if status := call(t, req, &fetched); status != http.StatusOK || fetched.Data.Request.Body != "" || fetched.Data.Response.Body != "" {
		t.Errorf("GET of a payment past its bodies retention: %d, bodies %q and %q; want none", status, fetched.Data.Request.Body, fetched.Data.Response.Body)
	}
	classFiles, _ := filepath.Glob(filepath.Join(dir, "messages-"+created.UTC().Format("2006-01-02")+".r*.db"))
	if len(classFiles) != 1 {
		entries, _ := os.ReadDir(dir)
		t.Errorf("the payments' class file of %s: %v; the directory holds %v", created.UTC().Format("2006-01-02"), classFiles, entries)
	}
}

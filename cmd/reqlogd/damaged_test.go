package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// postAt posts one message created at createdAt and returns the status, the
// reply and the id it was given.
func postAt(t *testing.T, base string, createdAt time.Time) (int, string, string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":"damaged","created_at":%d,"method":"GET","path":"/orders","request":{},"response":{"status_code":200}}`, createdAt.Unix())
	status, reply := callKeyed(t, http.MethodPost, base+"/v1/messages", body)
	var ack struct{ Data struct{ ID string } }
	if status == http.StatusOK {
		if err := json.Unmarshal([]byte(reply), &ack); err != nil || ack.Data.ID == "" {
			t.Fatalf("acknowledgement %s: %v", reply, err)
		}
	}
	return status, reply, ack.Data.ID
}

// callKeyed makes one request with killKey and returns its status and body.
func callKeyed(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+killKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(reply)
}

// A day file deleted under a running reqlogd: the next POST of that day is a
// 503 naming the file, /readyz turns 503 naming it, a POST of another day is
// acknowledged, and after a kill -9 and a restart every message
// acknowledged after the deletion is there, the store is ready, and the day
// takes writes again into a file of mode 0600.
func TestDayFileDeletedUnderReqlogd(t *testing.T) {
	dir := t.TempDir()
	cmd, base, err := startReqlogd(dir)
	if err != nil {
		t.Fatalf("reqlogd did not start: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	now := time.Now().UTC()
	if status, reply, _ := postAt(t, base, now); status != http.StatusOK {
		t.Fatalf("POST before the deletion: %d %s", status, reply)
	}
	day := "messages-" + now.Format("2006-01-02") + ".db"
	if err := os.Remove(filepath.Join(dir, day)); err != nil {
		t.Fatal(err)
	}

	status, reply, _ := postAt(t, base, now)
	if status != http.StatusServiceUnavailable || !strings.Contains(reply, day+" was deleted") {
		t.Fatalf("POST to the deleted day: %d %s; want 503 naming %s", status, reply, day)
	}
	if status, reply := callKeyed(t, http.MethodGet, base+"/readyz", ""); status != http.StatusServiceUnavailable || !strings.Contains(reply, day) {
		t.Errorf("/readyz after the deletion: %d %s; want 503 naming %s", status, reply, day)
	}
	status, reply, acked := postAt(t, base, now.Add(-24*time.Hour))
	if status != http.StatusOK {
		t.Fatalf("POST to another day after the deletion: %d %s", status, reply)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	cmd, base, err = startReqlogd(dir)
	if err != nil {
		t.Fatalf("reqlogd did not start again: %v", err)
	}
	if status, reply := callKeyed(t, http.MethodGet, base+"/v1/messages/"+acked, ""); status != http.StatusOK {
		t.Errorf("the message acknowledged after the deletion, after a restart: %d %s", status, reply)
	}
	if status, reply := callKeyed(t, http.MethodGet, base+"/readyz", ""); status != http.StatusOK {
		t.Errorf("/readyz after a restart: %d %s", status, reply)
	}
	if status, reply, _ := postAt(t, base, now); status != http.StatusOK {
		t.Errorf("POST to the day after a restart: %d %s", status, reply)
	}
	if info, err := os.Stat(filepath.Join(dir, day)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the day's new file: %v, %v; want mode 0600", info, err)
	}
}

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The two ways to back up a running reqlogd, each restored and started on:
// SIGUSR1 (into REQLOG_SQLITE_BACKUP_DIR) and reqlogd backup DIR beside it.
// Each copy, restored by reqlogd restore into an empty directory, serves
// the messages of every day and the alert endpoint and rule made before it
// (and holds the secrets reqlogd generated and keeps, which sign its portal
// links and key its rules' hashes).
func TestBackupOfARunningReqlogdRestores(t *testing.T) {
	dir, signalled, beside := t.TempDir(), filepath.Join(t.TempDir(), "signalled"), filepath.Join(t.TempDir(), "beside")
	cmd, base, err := startReqlogd(dir, "REQLOG_SQLITE_BACKUP_DIR="+signalled, "REQLOG_ALERTS_ALLOW_PRIVATE_WEBHOOKS=true")
	if err != nil {
		t.Fatalf("reqlogd did not start: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	now := time.Now().UTC()
	var ids []string
	for _, at := range []time.Time{now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), now} {
		status, reply, id := postAt(t, base, at)
		if status != http.StatusOK {
			t.Fatalf("POST: %d %s", status, reply)
		}
		ids = append(ids, id)
	}
	status, endpoint := callKeyed(t, http.MethodPost, base+"/v1/alerts/endpoints", `{"url":"http://127.0.0.1:9/hook","description":"ops"}`)
	if status != http.StatusCreated {
		t.Fatalf("creating the endpoint: %d %s", status, endpoint)
	}
	status, rule := callKeyed(t, http.MethodPost, base+"/v1/alerts/rules",
		`{"title":"Orders 5xx","metric":"server_error_rate","threshold":0.2,"window":"5m","min_requests":10}`)
	if status != http.StatusCreated {
		t.Fatalf("creating the rule: %d %s", status, rule)
	}

	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(signalled, "reqlog-backup.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backup in %s 30 s after SIGUSR1", signalled)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	var stdout, stderr bytes.Buffer
	env := envOf(map[string]string{"REQLOG_SQLITE_DIR": dir})
	if code := run([]string{"backup", beside}, env, &stdout, &stderr); code != exitOK {
		t.Fatalf("reqlogd backup beside the running reqlogd: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "8 files copied") {
		t.Errorf("reqlogd backup said %q; want the 3 day files, the alert file, the rollups file, reqlog-store.json, and the portal secret "+
			"and rules' hash key reqlogd generated and keeps, copied", stdout.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	for _, backup := range []string{signalled, beside} {
		restored := filepath.Join(t.TempDir(), "restored")
		stdout.Reset()
		stderr.Reset()
		if code := run([]string{"restore", backup}, envOf(map[string]string{"REQLOG_SQLITE_DIR": restored}), &stdout, &stderr); code != exitOK {
			t.Fatalf("reqlogd restore %s: exit %d, %s%s", backup, code, stdout.String(), stderr.String())
		}
		cmd, base, err := startReqlogd(restored)
		if err != nil {
			t.Fatalf("reqlogd did not start on the restored %s: %v", backup, err)
		}
		for _, id := range ids {
			if status, reply := callKeyed(t, http.MethodGet, base+"/v1/messages/"+id, ""); status != http.StatusOK {
				t.Errorf("message %s restored from %s: %d %s", id, backup, status, reply)
			}
		}
		if status, reply := callKeyed(t, http.MethodGet, base+"/v1/alerts/endpoints", ""); status != http.StatusOK || !strings.Contains(reply, `"description":"ops"`) {
			t.Errorf("endpoints restored from %s: %d %s", backup, status, reply)
		}
		if status, reply := callKeyed(t, http.MethodGet, base+"/v1/alerts/rules", ""); status != http.StatusOK || !strings.Contains(reply, `"title":"Orders 5xx"`) {
			t.Errorf("rules restored from %s: %d %s", backup, status, reply)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// A backup or restore is refused with a usage error without its
// directory, and with a store that keeps no data directory.
func TestBackupCommandRefusals(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"backup"}, envOf(nil), &stdout, &stderr); code == exitOK || !strings.Contains(stderr.String(), "directory is missing") {
		t.Errorf("reqlogd backup without a directory: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	env := envOf(map[string]string{"REQLOG_STORE": "mongodb", "REQLOG_MONGODB_URI": "mongodb://db"})
	if code := run([]string{"restore", t.TempDir()}, env, &stdout, &stderr); code != exitConfig || !strings.Contains(stderr.String(), "REQLOG_STORE") {
		t.Errorf("reqlogd restore with mongodb: exit %d, %s", code, stderr.String())
	}
}

// reqlogd restore -erasures-from keeps the journal of erasures of the data
// directory the backup replaces: an erasure asked after the backup erases
// the subject's restored message again at the start; the other message
// stays.
func TestRestoreKeepsTheErasuresAskedAfterTheBackup(t *testing.T) {
	dir, backup := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	cmd, base, err := startReqlogd(dir)
	if err != nil {
		t.Fatalf("reqlogd did not start: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	api := rescrubAPI{t: t, base: base, key: killKey, client: http.DefaultClient}
	api.putRules(`{"subjects":[{"id":"emails","detector":"email"}]}`)
	exchange := func(email string) string {
		return fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"POST","path":"/signup","request":{"body":"{\"email\":\"%s\"}"},"response":{"status_code":201}}`,
			time.Now().Unix(), email)
	}
	ids := api.mustSubmit([]string{exchange("restored.canary@example.com"), exchange("other@example.com")})
	var stdout, stderr bytes.Buffer
	env := envOf(map[string]string{"REQLOG_SQLITE_DIR": dir})
	if code := run([]string{"backup", backup}, env, &stdout, &stderr); code != exitOK {
		t.Fatalf("reqlogd backup: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	if status := api.do(http.MethodPost, "/v1/erasures", `{"subjects":["restored.canary@example.com"]}`, nil); status != http.StatusAccepted {
		t.Fatalf("POST /v1/erasures: %d", status)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	aside := dir + ".aside"
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"restore", "-erasures-from", aside, backup}, env, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), "with the journal of erasures of "+aside) {
		t.Fatalf("reqlogd restore -erasures-from: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	cmd, base, err = startReqlogd(dir)
	if err != nil {
		t.Fatalf("reqlogd did not start on the restored directory: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, reply := callKeyed(t, http.MethodGet, base+"/v1/messages/"+ids[0], "")
		if status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored message of the erased subject 30 s after the start: %d %s", status, reply)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	if status, reply := callKeyed(t, http.MethodGet, base+"/v1/messages/"+ids[1], ""); status != http.StatusOK {
		t.Errorf("the other restored message: %d %s", status, reply)
	}
}

// takeFlag takes reqlogd restore's own flag, in each of its spellings,
// and leaves the settings' flags and the operand.
func TestTakeFlag(t *testing.T) {
	for _, args := range [][]string{
		{"-erasures-from", "/old", "-sqlite-dir", "/data", "/backup"},
		{"--erasures-from=/old", "-sqlite-dir", "/data", "/backup"},
		{"-sqlite-dir", "/data", "-erasures-from=/old", "/backup"},
	} {
		value, rest, err := takeFlag(args, erasuresFromFlag)
		if err != nil || value != "/old" || strings.Join(rest, " ") != "-sqlite-dir /data /backup" {
			t.Errorf("takeFlag(%q) = %q, %q, %v; want /old and the rest", args, value, rest, err)
		}
	}
	for _, args := range [][]string{{"/backup", "-erasures-from"}, {"-erasures-from=", "/backup"}} {
		if _, _, err := takeFlag(args, erasuresFromFlag); err == nil || !strings.Contains(err.Error(), "-erasures-from") {
			t.Errorf("takeFlag(%q) = %v; want an error naming the flag", args, err)
		}
	}
	if value, rest, err := takeFlag([]string{"/backup"}, erasuresFromFlag); err != nil || value != "" || len(rest) != 1 {
		t.Errorf("takeFlag without the flag = %q, %q, %v", value, rest, err)
	}
}

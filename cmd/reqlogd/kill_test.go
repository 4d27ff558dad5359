package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// asReqlogdEnv set to 1 makes the test binary run as reqlogd (TestMain): the
// same run as main's, configured by the environment, in a process of its own
// that the test can kill -9. It spares building a second binary.
const asReqlogdEnv = "REQLOG_TEST_AS_REQLOGD"

// Kill rounds: reqlogd on the sqlite store under ingest load, killed with
// SIGKILL at a random moment once it has acknowledged messages, and started
// again on the same directory.
const (
	killRounds  = 20
	killClients = 8
	killBatch   = 10 // messages per POST
	killKey     = "rk_kill_test_0123456789"
)

// Every message acknowledged before any kill must be stored, and every day
// file must pass PRAGMA integrity_check, after twenty kill -9 under load.
func TestKill9UnderIngestLoadKeepsEveryAcknowledgedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty reqlogd processes killed under load; not in -short")
	}
	dir := t.TempDir()
	var acked []string
	for round := range killRounds {
		ids := killRound(t, dir, round)
		if len(ids) == 0 {
			t.Fatalf("round %d: nothing acknowledged before the kill", round)
		}
		acked = append(acked, ids...)
	}
	t.Logf("%d rounds: %d messages acknowledged", killRounds, len(acked))

	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatalf("opening the data directory after the kills: %v", err)
	}
	defer s.Close()
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	var found []string
	for chunk := range slices.Chunk(acked, 1000) {
		msgs, err := s.Lookup(context.Background(), scope, chunk)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		for _, m := range msgs {
			found = append(found, m.ID)
		}
	}
	slices.Sort(found)
	for _, id := range acked {
		if _, ok := slices.BinarySearch(found, id); !ok {
			t.Errorf("acknowledged message %s is not stored", id)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "messages-*.db"))
	if len(files) == 0 {
		t.Fatal("no day file")
	}
	for _, path := range files {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var result string
		err = db.QueryRow("PRAGMA integrity_check").Scan(&result)
		_ = db.Close()
		if err != nil || result != "ok" {
			t.Errorf("integrity_check of %s = %q, %v", path, result, err)
		}
	}
}

// killRound starts reqlogd on dir, loads it, kills it with SIGKILL a random
// moment after its first acknowledgement, and returns the ids acknowledged.
func killRound(t *testing.T, dir string, round int) []string {
	t.Helper()
	return killRoundWith(t, dir, round)
}

// killRoundWith is killRound with env added to reqlogd's environment.
func killRoundWith(t *testing.T, dir string, round int, env ...string) []string {
	t.Helper()
	cmd, base, err := startReqlogd(dir, env...)
	if err != nil {
		t.Fatalf("round %d: reqlogd did not start: %v", round, err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	var (
		mu    sync.Mutex
		ids   []string
		first = make(chan struct{})
		once  sync.Once
		stop  = make(chan struct{})
		load  sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for c := range killClients {
		load.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				got, err := submitBatch(client, base, fmt.Sprintf("r%d-c%d-%d", round, c, n))
				if err != nil {
					continue // refused, or cut by the kill
				}
				mu.Lock()
				ids = append(ids, got...)
				mu.Unlock()
				once.Do(func() { close(first) })
			}
		})
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		close(stop)
		load.Wait()
		t.Fatalf("round %d: no POST acknowledged within 10s", round)
	}
	time.Sleep(rand.N(300 * time.Millisecond)) // the kill lands at a random point of the load
	// An id is recorded only once its 200 was read: whatever is recorded
	// after the kill was answered before it.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	close(stop)
	load.Wait()
	return ids
}

// startReqlogd starts the test binary as reqlogd on the sqlite store in
// dir, with killKey the key of acme's live domain, and returns it once it
// listens, with its base URL. The caller kills it.
func startReqlogd(dir string, env ...string) (*exec.Cmd, string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), asReqlogdEnv+"=1", "REQLOG_STORE=sqlite", "REQLOG_SQLITE_DIR="+dir,
		"REQLOG_ADDR=127.0.0.1:0", "REQLOG_API_KEYS=acme:live:"+killKey, "REQLOG_VISIBILITY_DELAY=0",
		"REQLOG_RATE_LIMIT=0", "REQLOG_LOG_FORMAT=json", "REQLOG_LOG_LEVEL=info")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	base, err := listeningAddr(stderr)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", err
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return cmd, base, nil
}

// listeningAddr reads reqlogd's JSON log until its "listening" line.
func listeningAddr(stderr io.Reader) (string, error) {
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var entry struct{ Msg, Addr string }
		if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Msg == "listening" {
			return "http://" + entry.Addr, nil
		}
	}
	return "", fmt.Errorf("its log ended without a listening line: %v", lines.Err())
}

// submitBatch posts killBatch messages and returns their ids when acknowledged.
func submitBatch(client *http.Client, base, tag string) ([]string, error) {
	var items []string
	for i := range killBatch {
		items = append(items, fmt.Sprintf(`{"name":"kill","created_at":%d,"method":"POST","path":"/orders/%s-%d",`+
			`"request":{"header":{"Content-Type":"application/json"},"body":"{\"order\":\"%s-%d\",\"lines\":[1,2,3]}"},`+
			`"response":{"status_code":201,"body":"{\"ok\":true}"}}`, time.Now().Unix(), tag, i, tag, i))
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader("["+strings.Join(items, ",")+"]"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+killKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %v", resp.StatusCode, err)
	}
	var reply struct {
		Data []struct{ ID string }
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&reply); err != nil {
		return nil, err
	}
	ids := make([]string, len(reply.Data))
	for i, d := range reply.Data {
		ids[i] = d.ID
	}
	return ids, nil
}

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// rescrubAPI talks to one reqlogd as one account's key.
type rescrubAPI struct {
	t      *testing.T
	base   string
	key    string
	client *http.Client
}

func (a rescrubAPI) do(method, path, body string, into any, header ...string) int {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			a.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// submit posts items (JSON objects) and returns their ids.
func (a rescrubAPI) submit(items []string) ([]string, error) {
	req, err := http.NewRequest(http.MethodPost, a.base+"/v1/messages", strings.NewReader("["+strings.Join(items, ",")+"]"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var reply struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %v", resp.StatusCode, err)
	}
	ids := make([]string, len(reply.Data))
	for i, d := range reply.Data {
		ids[i] = d.ID
	}
	return ids, nil
}

func (a rescrubAPI) mustSubmit(items []string) []string {
	a.t.Helper()
	ids, err := a.submit(items)
	if err != nil {
		a.t.Fatalf("POST /v1/messages: %v", err)
	}
	return ids
}

func (a rescrubAPI) putRules(doc string) {
	a.t.Helper()
	var saved struct{ Data struct{ Version int64 } }
	if status := a.do(http.MethodPut, "/v1/rules", doc, &saved, "If-Match", `"0"`, "X-Reqlog-Reason", "scrub what is stored"); status != http.StatusOK {
		a.t.Fatalf("PUT /v1/rules: %d %+v", status, saved)
	}
}

// rescrubJob is a job as GET /v1/rules/rescrub/{id} shows it.
type rescrubJob struct {
	ID                        int64
	State                     string
	Scanned, Changed, Skipped int64
	Error                     string
}

func (a rescrubAPI) job(id int64) rescrubJob {
	a.t.Helper()
	var reply struct{ Data rescrubJob }
	if status := a.do(http.MethodGet, fmt.Sprintf("/v1/rules/rescrub/%d", id), "", &reply); status != http.StatusOK {
		a.t.Fatalf("GET re-scrub %d: %d", id, status)
	}
	return reply.Data
}

// awaitJob polls job id until until holds, for at most five minutes: a
// bound on a hang, which a race-built reqlogd at a CI's load needs (2,000
// messages in pages of 10 took more than a minute there).
func (a rescrubAPI) awaitJob(id int64, until func(rescrubJob) bool) rescrubJob {
	a.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		job := a.job(id)
		if until(job) {
			return job
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("re-scrub %d: %+v after five minutes", id, job)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (a rescrubAPI) startRescrub(from, to time.Time) int64 {
	a.t.Helper()
	var reply struct{ Data rescrubJob }
	body := fmt.Sprintf(`{"from": %q, "to": %q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
	if status := a.do(http.MethodPost, "/v1/rules/rescrub", body, &reply); status != http.StatusAccepted {
		a.t.Fatalf("POST /v1/rules/rescrub: %d %+v", status, reply)
	}
	return reply.Data.ID
}

// rowsHolding names the messages of dir's day files whose stored row,
// read as the store reads it (headers and bodies inflated from content),
// holds any of needles: a compressed row hides its text from filesHolding.
func rowsHolding(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	days, err := filepath.Glob(filepath.Join(dir, "messages-*.db"))
	if err != nil || len(days) == 0 {
		t.Fatalf("day files in %s: %v, %v", dir, days, err)
	}
	var found []string
	for _, day := range days {
		db, err := sql.Open(sqlitedb.DriverName, "file:"+day+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		reader, err := dayfile.NewRowReader(t.Context(), db)
		if err != nil {
			t.Fatalf("%s: %v", day, err)
		}
		rows, err := db.Query("SELECT " + dayfile.MessageColumns + " FROM messages")
		if err != nil {
			t.Fatalf("%s: %v", day, err)
		}
		for rows.Next() {
			m, err := reader.ScanMessage(rows)
			if err != nil {
				t.Fatalf("%s: %v", day, err)
			}
			raw, _ := json.Marshal(m)
			for _, n := range needles {
				if bytes.Contains(raw, []byte(n)) {
					found = append(found, fmt.Sprintf("message %s holds %q", m.ID, n))
				}
			}
		}
		if err := errors.Join(rows.Err(), rows.Close(), db.Close()); err != nil {
			t.Fatalf("%s: %v", day, err)
		}
	}
	return found
}

const rescrubRules = `{"privacy": [
	{"id": "emails", "select": ["**"], "match": {"detector": "email"}, "action": {"type": "mask"}},
	{"id": "token", "select": ["query.token"], "action": {"type": "remove"}},
	{"id": "partner", "select": ["request.headers.x-partner-id"], "action": {"type": "hash"}},
	{"id": "canaries", "select": ["body"], "match": {"pattern": "cnry[r]s[a-z0-9]+"}, "action": {"type": "mask"}}]}`

// rescrubItem is a submission holding canaries in a header, the query, a
// JSON body (a large one, over SQLite's page, every tenth) and a form body.
func rescrubItem(tag string, n int, at time.Time) string {
	body, _ := json.Marshal(map[string]any{"email": "cnryrs" + tag + "mail@example.com", "note": "cnryrs" + tag + "note",
		"pad": strings.Repeat("lorem ipsum ", 1+(n%10/9)*800)})
	item, _ := json.Marshal(map[string]any{"name": "signup", "created_at": at.Unix(), "method": "POST",
		"path":    "/v1/users?token=cnryrs" + tag + "tok&page=2",
		"request": map[string]any{"header": map[string]string{"X-Partner-Id": "cnryrs-partner", "Content-Type": "application/json"}, "body": string(body)},
		"response": map[string]any{"status_code": 201, "header": map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			"body": "email=cnryrs" + tag + "form%40example.net&plan=pro"}})
	return string(item)
}

// Values stored before their rule are gone once a re-scrub of them is
// done: from every reply, q search, export, and from every byte of the
// data directory's files (secure_delete, FTS5 secure-delete, the WAL
// truncated); a hashed value is hashed once, as at ingest.
func TestRescrubLeavesNoCanaryInTheDataDirectory(t *testing.T) {
	const key = "rk_rescrub_test_key_1"
	dir := t.TempDir()
	base := startRescrubGraph(t, dir, key)
	api := rescrubAPI{t: t, base: base, key: key, client: http.DefaultClient}

	now := time.Now()
	var before []string
	for batch := range 4 {
		var items []string
		for i := range 50 {
			items = append(items, rescrubItem(fmt.Sprintf("b%di%d", batch, i), i, now.Add(-time.Duration(batch*50+i)*time.Second)))
		}
		before = append(before, api.mustSubmit(items)...)
	}
	if held := rowsHolding(t, dir, "cnryrs"); len(held) < len(before) {
		t.Fatalf("before the re-scrub %d stored rows hold a canary, want all %d: the test proves nothing", len(held), len(before))
	}
	api.putRules(rescrubRules)
	control := api.mustSubmit([]string{rescrubItem("control", 0, now)})[0]
	job := api.awaitJob(api.startRescrub(now.Add(-time.Hour), now.Add(time.Hour)), func(j rescrubJob) bool { return j.State != "running" })
	if job.State != "done" || job.Changed != int64(len(before)) || job.Skipped != 1 {
		t.Fatalf("the re-scrub ended as %+v; want done, %d changed, the control skipped", job, len(before))
	}

	var controlMsg struct{ Data map[string]any }
	api.do(http.MethodGet, "/v1/messages/"+control, "", &controlMsg)
	hashed := controlMsg.Data["request"].(map[string]any)["header"].(map[string]any)["X-Partner-Id"]
	for _, id := range before {
		var got struct {
			Data  map[string]any
			Rules struct {
				RescrubbedBy int64 `json:"rescrubbed_by"`
				Changes      []rules.Change
			}
		}
		if status := api.do(http.MethodGet, "/v1/messages/"+id, "", &got); status != http.StatusOK {
			t.Fatalf("GET %s: %d", id, status)
		}
		raw, _ := json.Marshal(got)
		if strings.Contains(string(raw), "cnryrs") || got.Rules.RescrubbedBy != 1 {
			t.Fatalf("message %s after the re-scrub: %s", id, raw)
		}
		if h := got.Data["request"].(map[string]any)["header"].(map[string]any)["X-Partner-Id"]; fmt.Sprint(h) != fmt.Sprint(hashed) {
			t.Errorf("message %s: partner %v, want %v, the control's hash", id, h, hashed)
		}
	}
	var found struct{ Messages []any }
	api.do(http.MethodGet, "/v1/messages?q=cnryrsb0i1tok", "", &found)
	if len(found.Messages) != 0 {
		t.Errorf("q finds %d messages after the re-scrub", len(found.Messages))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/messages/export", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || bytes.Contains(export, []byte("cnryrs")) || !bytes.Contains(export, []byte(control)) {
		t.Errorf("export: %d, %d bytes, holding a canary: %v", resp.StatusCode, len(export), bytes.Contains(export, []byte("cnryrs")))
	}
	if held := append(rowsHolding(t, dir, "cnryrs"),
		conformance.FilesHolding(t, dir, "cnryrs", url.QueryEscape("cnryrs"))...); len(held) > 0 {
		t.Errorf("after the re-scrub: %s", strings.Join(held, "; "))
	}
	metrics := api.metrics()
	for _, want := range []string{`reqlog_rescrub_jobs_total{event="started",store="sqlite"} 1`, `reqlog_rescrub_jobs_total{event="done",store="sqlite"} 1`,
		fmt.Sprintf(`reqlog_rescrub_messages_scanned_total{store="sqlite"} %d`, len(before)+1),
		fmt.Sprintf(`reqlog_rescrub_messages_changed_total{store="sqlite"} %d`, len(before))} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// metrics is what /metrics says.
func (a rescrubAPI) metrics() string {
	a.t.Helper()
	resp, err := a.client.Get(a.base + "/metrics")
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// startRescrubGraph starts reqlogd in process on dir with key and returns
// its base URL.
func startRescrubGraph(t *testing.T, dir, key string) string {
	t.Helper()
	var server *httpapi.Server
	startGraph(t, map[string]string{"REQLOG_API_KEYS": "acme:live:" + key, "REQLOG_SQLITE_DIR": dir,
		"REQLOG_RULES_HASH_KEY": "rescrub-test-hash-key-0123", "REQLOG_RULES_POLL_INTERVAL": "50ms", "REQLOG_RATE_LIMIT": "0"}, &server)
	return "http://" + server.Addr().String()
}

// reqlogdProcess starts reqlogd as a process of its own on dir, for a kill.
func reqlogdProcess(t *testing.T, dir, key string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), asReqlogdEnv+"=1", "REQLOG_STORE=sqlite", "REQLOG_SQLITE_DIR="+dir,
		"REQLOG_ADDR=127.0.0.1:0", "REQLOG_API_KEYS=acme:live:"+key, "REQLOG_VISIBILITY_DELAY=0", "REQLOG_RATE_LIMIT=0",
		"REQLOG_LOG_FORMAT=json", "REQLOG_LOG_LEVEL=info", "REQLOG_RULES_HASH_KEY=rescrub-test-hash-key-0123",
		"REQLOG_RULES_POLL_INTERVAL=50ms", "REQLOG_RULES_RESCRUB_PAGE=10", "REQLOG_RULES_RESCRUB_LEASE=1s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base, err := listeningAddr(stderr)
	if err != nil {
		t.Fatalf("reqlogd did not start: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return cmd, base
}

// A re-scrub killed mid-way (kill -9) is taken up by the next reqlogd on
// the directory once its lease runs out, where it stopped: every message
// stored before the rule ends up scrubbed exactly once (a hashed value is
// hashed once), none is lost, and ingest goes on meanwhile, before and
// after the kill.
func TestRescrubResumesAfterAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("two reqlogd processes, one killed; not in -short")
	}
	const key = "rk_rescrub_kill_key_1"
	dir := t.TempDir()
	cmd, base := reqlogdProcess(t, dir, key)
	client := &http.Client{Timeout: 10 * time.Second}
	api := rescrubAPI{t: t, base: base, key: key, client: client}
	now := time.Now()
	var before []string
	for batch := range 20 {
		var items []string
		for i := range 100 {
			items = append(items, rescrubItem(fmt.Sprintf("k%di%d", batch, i), i, now.Add(-time.Duration(batch*100+i)*time.Millisecond)))
		}
		before = append(before, api.mustSubmit(items)...)
	}
	api.putRules(rescrubRules)
	control := api.mustSubmit([]string{rescrubItem("control", 0, now)})[0]

	// Ingest goes on throughout, into the job's range.
	var (
		mu     sync.Mutex
		during []string
		stop   = make(chan struct{})
		load   sync.WaitGroup
		target = base
	)
	load.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			to := rescrubAPI{t: t, base: target, key: key, client: client}
			mu.Unlock()
			if ids, err := to.submit([]string{rescrubItem(fmt.Sprintf("during%d", n), n, time.Now().Add(-time.Minute))}); err == nil {
				mu.Lock()
				during = append(during, ids...)
				mu.Unlock()
			}
		}
	})
	id := api.startRescrub(now.Add(-time.Hour), now.Add(time.Hour))
	api.awaitJob(id, func(j rescrubJob) bool { return j.Scanned >= 20 || j.State != "running" })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if job := storedJob(t, dir, id); job.State != rules.RescrubRunning || job.Scanned >= int64(len(before)) {
		t.Fatalf("killed after the job read all it had to (%+v): make it longer", job)
	}

	cmd, base = reqlogdProcess(t, dir, key)
	mu.Lock()
	target = base
	mu.Unlock()
	api.base = base
	job := api.awaitJob(id, func(j rescrubJob) bool { return j.State != "running" })
	close(stop)
	load.Wait()
	if job.State != "done" || job.Error != "" {
		t.Fatalf("after the restart the re-scrub ended as %+v, want done", job)
	}
	var controlMsg struct{ Data map[string]any }
	api.do(http.MethodGet, "/v1/messages/"+control, "", &controlMsg)
	hashed := fmt.Sprint(controlMsg.Data["request"].(map[string]any)["header"].(map[string]any)["X-Partner-Id"])
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	mu.Lock()
	acked := append(append(slices.Clone(before), control), during...)
	mu.Unlock()
	stored := map[string]domain.Message{}
	for chunk := range slices.Chunk(acked, 500) {
		msgs, err := s.Lookup(context.Background(), scope, chunk)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			stored[m.ID] = m
		}
	}
	for _, id := range acked {
		m, ok := stored[id]
		if !ok {
			t.Errorf("acknowledged message %s is lost", id)
			continue
		}
		raw, _ := json.Marshal(m)
		if strings.Contains(string(raw), "cnryrs") {
			t.Errorf("message %s still holds a canary: %.300s", id, raw)
		}
		if got := fmt.Sprint(m.Request.Header["X-Partner-Id"]); got != hashed {
			t.Errorf("message %s: partner %s, want %s: hashed once", id, got, hashed)
		}
	}
	for _, id := range before {
		if r := stored[id].Rules; r.Rescrubbed != 1 || r.Version != 0 {
			t.Errorf("message %s stored before the rule: record %+v, want re-scrubbed by version 1", id, r)
		}
	}
	t.Logf("%d messages stored before the rule, %d during the re-scrub; the job: %+v", len(before), len(during), job)
	if held := append(rowsHolding(t, dir, "cnryrs"),
		conformance.FilesHolding(t, dir, "cnryrs", url.QueryEscape("cnryrs"))...); len(held) > 0 {
		t.Errorf("after the re-scrub: %s", strings.Join(held, "; "))
	}
}

// storedJob reads re-scrub id of acme from the data directory's alert file.
func storedJob(t *testing.T, dir string, id int64) rules.RescrubJob {
	t.Helper()
	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := sqlite.NewAlertStore(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	job, err := a.RescrubJob(context.Background(), "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

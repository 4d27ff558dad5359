// Package compose_test checks the compose files as written: reqlogd keeps its
// data in a named volume, each store file points reqlogd at its store, and
// secrets reach containers only as files from ./secrets, never as values. That
// the files are valid compose, merged, is podman-compose config's job (.ci/deploy).
package compose_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type composeFile struct {
	Services map[string]struct {
		Image       string
		Environment map[string]string
		Secrets     []string
		Volumes     []string
		DependsOn   map[string]struct{ Condition string } `json:"depends_on"`
		Healthcheck *struct{ Test []string }
	}
	Volumes map[string]any
	Secrets map[string]struct{ File string }
}

func load(t *testing.T, name string) composeFile {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

var files = []string{"compose.yaml", "compose.elasticsearch.yaml", "compose.mongodb.yaml"}

// secretSettings are reqlogd's secret settings (those of cmd/reqlogd that have
// a _FILE variant), and the stores' own secret variables.
var secretSettings = regexp.MustCompile(`^(REQLOG_(API_KEYS|PORTAL_SECRET|MONGODB_URI|ELASTICSEARCH_PASSWORD|ELASTICSEARCH_API_KEY)|ELASTIC_PASSWORD|MONGO_INITDB_ROOT_PASSWORD)$`)

func TestSecretsAreFilesOnly(t *testing.T) {
	for _, name := range files {
		f := load(t, name)
		for svcName, svc := range f.Services {
			for variable, value := range svc.Environment {
				if secretSettings.MatchString(variable) {
					t.Errorf("%s: %s sets %s in its environment; give %s_FILE", name, svcName, variable, variable)
					continue
				}
				base, isFile := strings.CutSuffix(variable, "_FILE")
				if !isFile || !secretSettings.MatchString(base) {
					continue
				}
				secret, ok := strings.CutPrefix(value, "/run/secrets/")
				if !ok || !contains(svc.Secrets, secret) {
					t.Errorf("%s: %s's %s=%s is not one of its secrets %v", name, svcName, variable, value, svc.Secrets)
				}
			}
		}
		for secretName, s := range f.Secrets {
			if s.File != "./secrets/"+secretName {
				t.Errorf("%s: secret %s from %q, want ./secrets/%s (written by make-secrets)", name, secretName, s.File, secretName)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

func TestReqlogdKeepsItsDataInANamedVolume(t *testing.T) {
	f := load(t, "compose.yaml")
	svc, ok := f.Services["reqlogd"]
	if !ok {
		t.Fatal("no reqlogd service")
	}
	var volume string
	for _, v := range svc.Volumes {
		if source, ok := strings.CutSuffix(v, ":/var/lib/reqlog"); ok {
			volume = source
		}
	}
	if _, declared := f.Volumes[volume]; volume == "" || !declared {
		t.Errorf("reqlogd volumes %v: want a named volume, declared at the top, at /var/lib/reqlog", svc.Volumes)
	}
	if svc.Environment["REQLOG_STORE"] != "" {
		t.Errorf("REQLOG_STORE=%s: alone, reqlogd runs on its default, embedded store", svc.Environment["REQLOG_STORE"])
	}
	for _, secret := range []string{"api_keys", "portal_secret"} {
		if !contains(svc.Secrets, secret) {
			t.Errorf("reqlogd lacks the secret %s", secret)
		}
	}
}

// Each store file adds its store with a health check and points reqlogd at it,
// starting reqlogd once the store is healthy.
func TestStoreFiles(t *testing.T) {
	for name, store := range map[string]struct{ service, setting, variable, value string }{
		"compose.elasticsearch.yaml": {"elasticsearch", "elasticsearch", "REQLOG_ELASTICSEARCH_URL", "http://elasticsearch:9200"},
		"compose.mongodb.yaml":       {"mongodb", "mongodb", "REQLOG_MONGODB_URI_FILE", "/run/secrets/mongodb_uri"},
	} {
		f := load(t, name)
		reqlogd := f.Services["reqlogd"]
		if reqlogd.Environment["REQLOG_STORE"] != store.setting || reqlogd.Environment[store.variable] != store.value {
			t.Errorf("%s: reqlogd environment %v, want REQLOG_STORE=%s and %s=%s", name, reqlogd.Environment, store.setting, store.variable, store.value)
		}
		if s, ok := f.Services[store.service]; !ok || s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: no %s service with a health check", name, store.service)
		}
		if reqlogd.DependsOn[store.service].Condition != "service_healthy" {
			t.Errorf("%s: reqlogd does not wait for %s to be healthy", name, store.service)
		}
	}
}

// make-secrets writes every secret the compose files read, each once, in a
// private directory, readable by the containers' users.
func TestMakeSecrets(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile("make-secrets")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "make-secrets"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		out, err := exec.Command(filepath.Join(dir, "make-secrets"), "acme").CombinedOutput()
		if err != nil {
			t.Fatalf("make-secrets: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, "secrets", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	for _, name := range files {
		for secret := range load(t, name).Secrets {
			info, err := os.Stat(filepath.Join(dir, "secrets", secret))
			if err != nil || info.Size() == 0 || info.Mode().Perm() != 0o644 {
				t.Errorf("%s's secret %s: %v, %v", name, secret, info, err)
			}
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "secrets")); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("secrets directory: %v, %v; want mode 0700", info, err)
	}
	keys := read("api_keys")
	if !regexp.MustCompile(`^acme:live:rk_live_[0-9a-f]{48}$`).MatchString(keys) || !strings.Contains(out, strings.TrimPrefix(keys, "acme:live:")) {
		t.Errorf("api_keys %q, output %q: want acme:live:<key>, and the key printed", keys, out)
	}
	if len(read("portal_secret")) < 32 {
		t.Error("portal secret shorter than 32 bytes")
	}
	if uri := read("mongodb_uri"); !strings.Contains(uri, ":"+read("mongodb_password")+"@mongodb:27017/") {
		t.Errorf("mongodb_uri %q does not hold mongodb_password", uri)
	}
	run()
	if read("api_keys") != keys {
		t.Error("a second run replaced an existing secret")
	}
}

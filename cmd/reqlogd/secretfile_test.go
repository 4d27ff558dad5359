package main

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/app"
)

// A secret setting added later gets its file row too, or this fails.
func TestEverySecretCanComeFromAFile(t *testing.T) {
	for _, s := range settings {
		switch {
		case s.secret && !hasFileRow(s.key):
			t.Errorf("secret setting %s has no secretFileSetting(%q) row", s.env(), s.key)
		case s.fileOf != "" && !settingNamed(s.fileOf).secret:
			t.Errorf("%s reads %s from a file, which is not a secret setting", s.env(), s.fileOf)
		}
	}
}

func hasFileRow(key string) bool {
	for _, s := range settings {
		if s.fileOf == key {
			return true
		}
	}
	return false
}

// Each secret's cases of settingCases, written to a file (with the line break an
// editor or `echo` leaves) and named from each source, set what the value itself
// sets.
func TestSecretFromFile(t *testing.T) {
	for _, row := range settings {
		if row.fileOf == "" {
			continue
		}
		tested := false
		for _, tc := range settingCases {
			if tc.key != row.fileOf {
				continue
			}
			tested = true
			path := writeFile(t, tc.value+"\n")
			for source, set := range map[string]func(env map[string]string) []string{
				"environment": func(env map[string]string) []string { env[row.env()] = path; return nil },
				"file":        func(env map[string]string) []string { env[configFileEnv] = writeYAML(t, row.key, path); return nil },
				"flag":        func(map[string]string) []string { return []string{"-" + row.flag(), path} },
			} {
				t.Run(row.key+"/"+source, func(t *testing.T) {
					env := maps.Clone(tc.extra)
					if env == nil {
						env = map[string]string{}
					}
					cfg, err := loadConfig(set(env), envOf(env))
					if err != nil {
						t.Fatal(err)
					}
					if !tc.check(cfg) {
						t.Errorf("%s=%s holding %q was not applied", row.env(), path, tc.value)
					}
				})
			}
		}
		if !tested {
			t.Errorf("%s has no case in settingCases", row.fileOf)
		}
	}
}

func TestSecretFileRefusals(t *testing.T) {
	const secret = "s3cr3t-portal-value" // too short for a portal secret
	validKeys := writeFile(t, "acme:live:"+strings.Repeat("k", 32)+"\n")
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		setting string
		want    string // in the message
	}{
		{"missing file", map[string]string{"REQLOG_API_KEYS_FILE": filepath.Join(dir, "absent")}, nil,
			"REQLOG_API_KEYS_FILE", "no such file"},
		{"a directory", map[string]string{"REQLOG_API_KEYS_FILE": dir}, nil, "REQLOG_API_KEYS_FILE", "directory"},
		// An empty file is a secret mounted wrong, not "no keys, generate one".
		{"empty file", map[string]string{"REQLOG_API_KEYS_FILE": writeFile(t, "\n")}, nil, "REQLOG_API_KEYS_FILE", "empty"},
		{"too large", map[string]string{"REQLOG_PORTAL_SECRET_FILE": writeFile(t, strings.Repeat("s", maxSecretFileBytes+1))}, nil,
			"REQLOG_PORTAL_SECRET_FILE", "too large"},
		{"invalid content", map[string]string{"REQLOG_PORTAL_SECRET_FILE": writeFile(t, secret+"\n")}, nil,
			"REQLOG_PORTAL_SECRET", "named by environment"},
		{"invalid content by flag", nil, []string{"-portal-secret-file", writeFile(t, secret)},
			"REQLOG_PORTAL_SECRET", "named by flag -portal-secret-file"},
		{"both in the environment", map[string]string{"REQLOG_API_KEYS": "acme:live:" + secret, "REQLOG_API_KEYS_FILE": validKeys}, nil,
			"REQLOG_API_KEYS_FILE", "REQLOG_API_KEYS:"},
		{"both on the command line", nil, []string{"-elasticsearch-password", secret, "-elasticsearch-password-file", validKeys},
			"REQLOG_ELASTICSEARCH_PASSWORD_FILE", "give one of them"},
		{"both in the config file", map[string]string{configFileEnv: writeFile(t, "portal:\n  secret: "+secret+"\n  secret_file: "+validKeys+"\n")}, nil,
			"REQLOG_PORTAL_SECRET_FILE", "give one of them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(tc.args, envOf(tc.env))
			var cfgErr *app.ConfigError
			if !errors.As(err, &cfgErr) {
				t.Fatalf("loadConfig = %v, want a *app.ConfigError", err)
			}
			if cfgErr.Setting != tc.setting || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one naming %s and saying %q", err, tc.setting, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
}

// Sources keep their precedence: a file named in the environment overrides the
// config file's value, and a flag's value overrides the environment's file.
func TestSecretFilePrecedence(t *testing.T) {
	fromFile := strings.Repeat("f", 32)
	secretFile := writeFile(t, fromFile+"\n")
	yaml := writeYAML(t, "portal.secret", strings.Repeat("y", 32))
	cfg, err := loadConfig(nil, envOf(map[string]string{configFileEnv: yaml, "REQLOG_PORTAL_SECRET_FILE": secretFile}))
	if err != nil || string(cfg.Portal.Secret) != fromFile {
		t.Errorf("environment's file under the config file's value: %q, %v", cfg.Portal.Secret, err)
	}
	fromFlag := strings.Repeat("g", 32)
	cfg, err = loadConfig([]string{"-portal-secret", fromFlag}, envOf(map[string]string{"REQLOG_PORTAL_SECRET_FILE": secretFile}))
	if err != nil || string(cfg.Portal.Secret) != fromFlag {
		t.Errorf("flag under the environment's file: %q, %v", cfg.Portal.Secret, err)
	}
}

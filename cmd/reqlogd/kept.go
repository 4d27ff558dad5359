package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// With the sqlite store, the development key and the portal secret that
// reqlogd generates when none is configured are kept in the data directory,
// so a restart keeps the same key and the portal links it printed. Other
// stores keep nothing on this machine, so their generated values last one run.
const (
	keptDevKeyName       = "dev-api-key"
	keptPortalSecretName = "portal-secret"
)

// keepGenerated makes cfg's generated secrets last across restarts (sqlite
// store only): the portal secret is read from the data directory, or
// generated and written there, when none is configured. It returns how to
// get the development key.
func keepGenerated(cfg *config) (devKey func() (string, error), err error) {
	if cfg.Store != storeSQLite {
		return newDevKey, nil
	}
	dir := cfg.SQLite.Dir
	if len(cfg.Portal.Secret) == 0 {
		secret, err := kept(dir, keptPortalSecretName, newPortalSecret)
		if err != nil {
			return nil, err
		}
		cfg.Portal.Secret = []byte(secret)
	}
	return func() (string, error) { return kept(dir, keptDevKeyName, newDevKey) }, nil
}

func newDevKey() (string, error) { return "rk_dev_" + rand.Text(), nil }

// newPortalSecret is 32 random bytes as 64 hex digits (the secret is the
// text's bytes).
func newPortalSecret() (string, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return hex.EncodeToString(b), err
}

// kept returns the value in dir/name, or generates one and writes it there
// (mode 0600, written whole or not at all).
func kept(dir, name string, generate func() (string, error)) (string, error) {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		value := strings.TrimSpace(string(data))
		if value == "" {
			return "", fmt.Errorf("%s is empty: delete it to have a new one generated", path)
		}
		return value, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	value, err := generate()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(value+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return value, nil
}

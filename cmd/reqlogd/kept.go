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

// With the sqlite store, the development key, the portal secret and the
// rules' hash key that reqlogd generates when none is configured are kept in
// the data directory, so a restart keeps the same key, the portal links it
// printed and the hashes rules made. Other stores keep nothing on this
// machine, so their generated values last one run; the hash key is generated
// for the memory store alone (replicas of a shared store must share theirs).
const (
	keptDevKeyName       = "dev-api-key"
	keptPortalSecretName = "portal-secret"
	keptRulesHashKeyName = "rules-hash-key"
)

// keepGenerated makes cfg's generated secrets last across restarts (sqlite
// store only): the portal secret and the rules' hash key are read from the
// data directory, or generated, when none is configured. It returns how to
// get the development key, and what was generated, to be written into the
// directory once the store holds its lock: a reqlogd refused by another's
// lock must leave that directory alone.
func keepGenerated(cfg *config) (devKey func() (string, error), unsaved *generated, err error) {
	unsaved = &generated{dir: cfg.SQLite.Dir}
	if cfg.Store == storeMemory && len(cfg.App.Rules.HashKey) == 0 {
		key, err := newPortalSecret()
		if err != nil {
			return nil, nil, err
		}
		cfg.App.Rules.HashKey = []byte(key)
	}
	if cfg.Store != storeSQLite {
		return newDevKey, unsaved, nil
	}
	if len(cfg.App.Rules.HashKey) == 0 {
		key, err := unsaved.get(keptRulesHashKeyName, newPortalSecret)
		if err != nil {
			return nil, nil, err
		}
		cfg.App.Rules.HashKey = []byte(key)
	}
	if len(cfg.Portal.Secret) == 0 {
		secret, err := unsaved.get(keptPortalSecretName, newPortalSecret)
		if err != nil {
			return nil, nil, err
		}
		cfg.Portal.Secret = []byte(secret)
	}
	return func() (string, error) { return unsaved.get(keptDevKeyName, newDevKey) }, unsaved, nil
}

func newDevKey() (string, error) { return "rk_dev_" + rand.Text(), nil }

// newPortalSecret is 32 random bytes as 64 hex digits (the secret is the
// text's bytes); the rules' hash key is made alike.
func newPortalSecret() (string, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return hex.EncodeToString(b), err
}

// generated holds the values generated this run that belong in dir.
type generated struct {
	dir   string
	names []string
	value map[string]string
}

// get returns the value in dir/name, or generates one for save to write.
func (g *generated) get(name string, generate func() (string, error)) (string, error) {
	path := filepath.Join(g.dir, name)
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
	if g.value == nil {
		g.value = map[string]string{}
	}
	g.names, g.value[name] = append(g.names, name), value
	return value, nil
}

// save writes each generated value into dir (mode 0600, written whole or not at
// all). Call it once the store holds the directory's lock.
func (g *generated) save() error {
	for _, name := range g.names {
		path := filepath.Join(g.dir, name)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(g.value[name]+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

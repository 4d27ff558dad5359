package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Secret settings can also be read from a file, as container secrets
// (/run/secrets/NAME), Kubernetes Secret volumes and systemd credentials hand
// them over: a value in the environment shows in `podman inspect`, in the
// compose file and in /proc/PID/environ.
//
// The row of REQLOG_API_KEYS_FILE (flag -api-keys-file, YAML api_keys_file) names
// the file; its content is parsed as REQLOG_API_KEYS would be, with trailing line
// breaks dropped, and errors in it name REQLOG_API_KEYS and the file, never the
// content. Within one source, giving a secret both directly and as a file is an
// error: which one was meant cannot be told. Across sources the usual precedence
// holds.

// maxSecretFileBytes bounds a secret file: a path to something else (a log, a
// device such as /dev/zero) must not be read whole into memory.
const maxSecretFileBytes = 64 << 10

// secretFileSetting is the row that reads the secret setting key from a file.
func secretFileSetting(key string) setting {
	return setting{key: key + "_file", fileOf: key,
		usage: "path of a file holding " + setting{key: key}.env() + " (e.g. /run/secrets/NAME; trailing line breaks are dropped)",
		show:  func(config) string { return "" }}
}

// settingNamed is the row of key; it panics on a key no row has, a programming
// error in the table.
func settingNamed(key string) setting {
	for _, s := range settings {
		if s.key == key {
			return s
		}
	}
	panic("reqlogd: unknown setting " + key)
}

// applySecretFile reads the file at path and applies its content to the secret
// setting s reads.
func applySecretFile(cfg *config, s setting, path, source string) error {
	path = strings.TrimSpace(path)
	content, err := readSecretFile(path)
	if err != nil {
		return s.invalid(path, source, err.Error())
	}
	if err := apply(cfg, settingNamed(s.fileOf), content, "file "+path+", named by "+source); err != nil {
		return err
	}
	cfg.origins[s.key] = origin{value: path, source: source}
	return nil
}

func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot open the file: %w", withoutPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot read the file: %w", withoutPath(err))
	case len(data) > maxSecretFileBytes:
		return "", fmt.Errorf("the file is larger than %d KiB, too large for a secret", maxSecretFileBytes>>10)
	}
	content := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(content) == "" {
		// Unlike an empty environment variable, not "unset": an empty secret file is
		// a mistake in mounting it, and must not silently mean a generated key.
		return "", errors.New("the file is empty")
	}
	return content, nil
}

// withoutPath drops the path an *fs.PathError repeats: the error names it already.
func withoutPath(err error) error {
	if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// bothGiven refuses a secret that one source gives both directly and as a file;
// given tells whether that source gives a setting.
func bothGiven(source string, given func(setting) bool) error {
	for _, s := range settings {
		if s.fileOf != "" && given(s) && given(settingNamed(s.fileOf)) {
			return s.invalid("", source, "is given together with "+settingNamed(s.fileOf).env()+": give one of them")
		}
	}
	return nil
}

package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/reqlog/reqlog/domain"
)

// APIKey is one configured key. Only its SHA-256 digest is kept, so no plaintext
// key stays in memory after start-up.
type APIKey struct {
	Account string
	Domain  string
	Digest  [sha256.Size]byte
	// Short reports a plaintext key of fewer than MinKeyLength characters: easy to
	// guess, or the account name typed where the key belongs (the key then shows
	// in the logs as an account). Start-up warns about it.
	Short bool
}

// MinKeyLength is the key length below which start-up warns.
const MinKeyLength = 16

const digestPrefix = "sha256:"

var accountPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// NewAPIKey checks account and domain and hashes key.
func NewAPIKey(account, domainName, key string) (APIKey, error) {
	if err := checkScope(account, domainName); err != nil {
		return APIKey{}, err
	}
	if err := checkKey(key); err != nil {
		return APIKey{}, err
	}
	return APIKey{Account: account, Domain: domainName, Digest: sha256.Sum256([]byte(key)), Short: len(key) < MinKeyLength}, nil
}

// ParseAPIKeys reads comma-separated entries "account:domain:key" or
// "account:domain:sha256:<64 hex digits>". Errors name the entry by position and
// quote none of its fields: a key typed in the wrong position must not be echoed.
func ParseAPIKeys(spec string) ([]APIKey, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var keys []APIKey
	seen := map[[sha256.Size]byte]int{}
	for i, entry := range strings.Split(spec, ",") {
		key, err := parseAPIKey(strings.TrimSpace(entry))
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if first, dup := seen[key.Digest]; dup {
			return nil, fmt.Errorf("entry %d repeats the key of entry %d", i+1, first)
		}
		seen[key.Digest] = i + 1
		keys = append(keys, key)
	}
	return keys, nil
}

func parseAPIKey(entry string) (APIKey, error) {
	if entry == "" {
		return APIKey{}, errors.New("is empty")
	}
	account, rest, ok1 := strings.Cut(entry, ":")
	domainName, secret, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return APIKey{}, errors.New("must have the form account:domain:key or account:domain:sha256:<hex digest>")
	}
	hexDigest, hashed := strings.CutPrefix(secret, digestPrefix)
	if !hashed {
		return NewAPIKey(account, domainName, secret)
	}
	if err := checkScope(account, domainName); err != nil {
		return APIKey{}, err
	}
	raw, err := hex.DecodeString(hexDigest)
	if err != nil || len(raw) != sha256.Size {
		return APIKey{}, fmt.Errorf("the digest must be %d hexadecimal digits", 2*sha256.Size)
	}
	k := APIKey{Account: account, Domain: domainName}
	copy(k.Digest[:], raw)
	return k, nil
}

// ValidAccount reports whether account is an account name keys may carry: 1
// to 64 characters from A-Z a-z 0-9 . _ -.
func ValidAccount(account string) bool { return accountPattern.MatchString(account) }

func checkScope(account, domainName string) error {
	if !ValidAccount(account) {
		return errors.New("the account (first field) must be 1 to 64 characters from A-Z a-z 0-9 . _ -")
	}
	if !domain.ValidDomain(domainName) {
		return fmt.Errorf("the domain (second field) must be %s or %s", domain.DomainLive, domain.DomainTest)
	}
	return nil
}

// checkKey refuses keys a client could not send intact in an Authorization header.
func checkKey(key string) error {
	if key == "" {
		return errors.New("the key is empty")
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return errors.New("the key must consist of visible ASCII characters without spaces")
		}
	}
	return nil
}

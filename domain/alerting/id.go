package alerting

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/reqlog/reqlog/domain"
)

// Prefixes of the ids of alerting's objects: a prefix tells what an id names.
const (
	RuleIDPrefix     = "alr_"
	EndpointIDPrefix = "whe_"
	EventIDPrefix    = "evt_"
	DeliveryIDPrefix = "dlv_"
	AttemptIDPrefix  = "att_"
	// alertIDLen is the random or derived part: 16 characters of 62, 95 bits.
	alertIDLen = 16
)

// NewID returns prefix and 16 random Alphanumerics.
func NewID(prefix string) (string, error) {
	var b [alertIDLen]byte
	if err := domain.RandomAlphanumerics(b[:]); err != nil {
		return "", fmt.Errorf("new id: %w", err)
	}
	return prefix + string(b[:]), nil
}

// DerivedID returns prefix and 16 Alphanumerics derived from parts: the
// same parts always give the same id, so two replicas that decide the same
// thing write the same record, once.
func DerivedID(prefix string, parts ...string) string {
	sum := sha256.Sum256([]byte(prefix + "\x00" + strings.Join(parts, "\x00")))
	var b [alertIDLen]byte
	for i := range b {
		b[i] = domain.Alphanumerics[binary.BigEndian.Uint16(sum[2*i:])%uint16(len(domain.Alphanumerics))]
	}
	return prefix + string(b[:])
}

// IsID reports whether s has the form of an id with prefix.
func IsID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != alertIDLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(domain.Alphanumerics, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// WebhookSecretPrefix starts every endpoint secret, as Standard Webhooks writes
// them: the rest is the key in base64.
const WebhookSecretPrefix = "whsec_"

// webhookKeyBytes is the length of a secret's key: 24 bytes, as Svix's.
const webhookKeyBytes = 24

// NewWebhookSecret returns a fresh random endpoint secret ("whsec_" + base64).
func NewWebhookSecret() (string, error) {
	key := make([]byte, webhookKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("new webhook secret: %w", err)
	}
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// WebhookKey returns the key of a secret made by NewWebhookSecret.
func WebhookKey(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a webhook secret starts with %s", WebhookSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("a webhook secret is %s and base64", WebhookSecretPrefix)
	}
	return key, nil
}

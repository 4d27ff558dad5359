package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

const (
	referencePrefix = "msg_"
	referenceLen    = 12
	Alphanumerics   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// idempotencyNamespace scopes name-based ids derived from Idempotency-Key headers.
var idempotencyNamespace = uuid.MustParse("6f1d0c7e-4a5b-4c1e-9a59-2f3c6a0b8d17")

// NewIdentity returns a fresh time-ordered id (UUID v7) and a random reference.
func NewIdentity() (Identity, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Identity{}, fmt.Errorf("new message id: %w", err)
	}
	var ref [referenceLen]byte
	if err := RandomAlphanumerics(ref[:]); err != nil {
		return Identity{}, fmt.Errorf("new message reference: %w", err)
	}
	return Identity{ID: id.String(), Reference: referencePrefix + string(ref[:])}, nil
}

// DerivedIdentity is the identity of item index of a request sent with an
// Idempotency-Key: the same scope, key and index always give the same id and
// reference, so a retried request stores nothing twice.
func DerivedIdentity(scope Scope, idempotencyKey string, index int) Identity {
	name := strings.Join([]string{scope.Account, scope.Domain, idempotencyKey, strconv.Itoa(index)}, "\x00")
	id := uuid.NewSHA1(idempotencyNamespace, []byte(name))
	// The reference comes from a separate hash so it cannot be read off the id.
	sum := sha256.Sum256([]byte("reference\x00" + name))
	var ref [referenceLen]byte
	for i := range ref {
		ref[i] = Alphanumerics[binary.BigEndian.Uint16(sum[2*i:])%uint16(len(Alphanumerics))]
	}
	return Identity{ID: id.String(), Reference: referencePrefix + string(ref[:])}
}

// RandomAlphanumerics fills dst uniformly from Alphanumerics (rejection sampling,
// so no character is likelier than another).
func RandomAlphanumerics(dst []byte) error {
	const limit = 256 - 256%len(Alphanumerics)
	buf := make([]byte, len(dst)*2)
	for filled := 0; filled < len(dst); {
		if _, err := rand.Read(buf); err != nil {
			return err
		}
		for _, b := range buf {
			if int(b) < limit && filled < len(dst) {
				dst[filled] = Alphanumerics[int(b)%len(Alphanumerics)]
				filled++
			}
		}
	}
	return nil
}

// IsReference reports whether s has the form of a message reference.
func IsReference(s string) bool {
	if len(s) != len(referencePrefix)+referenceLen || !strings.HasPrefix(s, referencePrefix) {
		return false
	}
	for i := len(referencePrefix); i < len(s); i++ {
		if strings.IndexByte(Alphanumerics, s[i]) < 0 {
			return false
		}
	}
	return true
}

// CanonicalID returns s as a lower-case canonical UUID, if it is one.
func CanonicalID(s string) (string, bool) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", false
	}
	return id.String(), true
}

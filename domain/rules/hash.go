package rules

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"
)

// HashValue is the hash action's text of value: a keyed hash (HMAC-SHA256,
// its first 16 bytes), so that equal values stay equal and cannot be guessed
// without the key.
func HashValue(key []byte, value string) string {
	return newKeyedHash(key).value(value)
}

// SubjectHash is the keyed hash a subject index holds for value.
func SubjectHash(key []byte, value string) string {
	return newKeyedHash(key).subject(value)
}

// keyedHash computes HashValue and SubjectHash under one key, reusing the
// HMAC states: making one (two digests and the key's pads) costs more than
// hashing a short value with it.
type keyedHash struct {
	states sync.Pool // of *keyedState
}

type keyedState struct {
	mac    hash.Hash
	buf    []byte // the text hashed, so that Write needs no conversion
	digest []byte // Sum's, which an array on the stack would escape for
}

func newKeyedHash(key []byte) *keyedHash {
	key = append([]byte(nil), key...)
	k := &keyedHash{}
	k.states.New = func() any { return &keyedState{mac: hmac.New(sha256.New, key)} }
	return k
}

// sum is the hex of the first 16 bytes of the HMAC of prefix and value,
// after "hash:" when hashPrefix.
func (k *keyedHash) sum(prefix, value string, hashPrefix bool) string {
	s := k.states.Get().(*keyedState)
	defer k.states.Put(s)
	s.mac.Reset()
	s.buf = append(append(s.buf[:0], prefix...), value...)
	s.mac.Write(s.buf)
	s.digest = s.mac.Sum(s.digest[:0])
	var out [len("hash:") + 32]byte
	copy(out[:], "hash:")
	hex.Encode(out[len("hash:"):], s.digest[:16])
	if hashPrefix {
		return string(out[:])
	}
	return string(out[len("hash:"):])
}

// value is HashValue of value.
func (k *keyedHash) value(value string) string { return k.sum("", value, true) }

// subject is SubjectHash of value.
func (k *keyedHash) subject(value string) string { return k.normalSubject(NormalizeSubject(value)) }

// normalSubject is SubjectHash of value, already normalised.
func (k *keyedHash) normalSubject(value string) string { return k.sum("subject\x00", value, false) }

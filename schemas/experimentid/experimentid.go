// Package experimentid is the form of an experiment ID, shared by the
// store that mints them and the HTTP side that must refuse anything else
// before it puts an ID into a URL: 128 random bits from crypto/rand,
// unpadded base64url (22 characters), unguessable and URL-safe.
package experimentid

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// randomBytes is the number of random bytes in an ID.
const randomBytes = 16

// Len is the length of every experiment ID.
var Len = base64.RawURLEncoding.EncodedLen(randomBytes)

// New returns a fresh experiment ID.
func New() string {
	b := make([]byte, randomBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it aborts the process instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Valid reports whether id is of the form New returns: Len characters of
// strict unpadded base64url, so it holds no '/', '\\', '.' or '%'.
func Valid(id string) bool {
	if len(id) != Len {
		return false
	}
	// Strict decoding still skips CR and LF: the ID must be its own
	// spelling.
	b, err := base64.RawURLEncoding.Strict().DecodeString(id)
	return err == nil && base64.RawURLEncoding.EncodeToString(b) == id
}

// OfBlobKey returns the experiment a blob key names: its part before the
// first '.' (the read service writes keys as ID "." encoded reference), and
// whether the key has one.
func OfBlobKey(key string) (eid string, ok bool) {
	eid, _, ok = strings.Cut(key, ".")
	return eid, ok
}

package reader

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/tbhub/tbhub/services/internal/store"
)

// A blob key, as ReadBlobSequences hands it out and ReadBlob takes it back,
// is
//
//	store.BlobID(eid, ref) + "." + base64url(HMAC-SHA256(secret, that ID)[:16])
//
// that is "{eid}.{base64url(run, tag, step, index)}.{mac}": only URL-safe
// characters, so TensorBoard puts it in a query string unescaped. It starts
// with the experiment, as the tenancy table reads it (ExperimentOfBlobKey),
// so the caller is checked against the experiment the key was issued for;
// the MAC makes every other part unforgeable, so a key can name nothing but
// a blob this service listed for that experiment.

// blobKeyMACBytes is the length of the truncated MAC (128 bits).
const blobKeyMACBytes = 16

type blobKeyCodec struct{ secret []byte }

func (c blobKeyCodec) mac(id string) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(id))
	return m.Sum(nil)[:blobKeyMACBytes]
}

// Encode returns the key of blob ref of experiment eid.
func (c blobKeyCodec) Encode(eid string, ref store.BlobRef) string {
	id := store.BlobID(eid, ref)
	return id + "." + base64.RawURLEncoding.EncodeToString(c.mac(id))
}

// Decode checks a key and returns what it names. Errors wrap
// store.ErrInvalidArgument.
func (c blobKeyCodec) Decode(key string) (eid string, ref store.BlobRef, err error) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return "", store.BlobRef{}, fmt.Errorf("blob key: no MAC: %w", store.ErrInvalidArgument)
	}
	id, sum := key[:i], key[i+1:]
	got, err := base64.RawURLEncoding.Strict().DecodeString(sum)
	if err != nil || !hmac.Equal(got, c.mac(id)) {
		return "", store.BlobRef{}, fmt.Errorf("blob key: not issued by this service: %w", store.ErrInvalidArgument)
	}
	return store.ParseBlobID(id)
}

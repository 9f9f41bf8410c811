package reader

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// A blob key, as ReadBlobSequences hands it out and ReadBlob takes it back,
// is
//
//	id  = store.BlobID(eid, ref)
//	key = id + "." + base64url(crc32c || HMAC-SHA256(secret, id || crc32c)[:16])
//
// that is "{eid}.{base64url(run, tag, step, index)}.{tail}": only URL-safe
// characters, so TensorBoard puts it in a query string unescaped. It starts
// with the experiment, as the tenancy table reads it (ExperimentOfBlobKey),
// so the caller is checked against the experiment the key was issued for;
// the MAC makes every other part unforgeable, so a key can name nothing but
// a blob this service listed for that experiment. The blob's CRC32C makes
// the key name content, not a slot: if the step is uploaded again with
// other bytes, the old key stops working (NOT_FOUND) instead of serving
// the new bytes, so clients may cache a key's bytes forever.

// blobKeyMACBytes is the length of the truncated MAC (128 bits).
const blobKeyMACBytes = 16

type blobKeyCodec struct{ secret []byte }

// tail returns the key's last part before base64: the CRC and the MAC.
func (c blobKeyCodec) tail(id string, crc uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, crc)
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(id))
	m.Write(b)
	return m.Sum(b)[:4+blobKeyMACBytes]
}

// Encode returns the key of blob ref of experiment eid, whose content has
// the given CRC32C.
func (c blobKeyCodec) Encode(eid string, ref store.BlobRef, crc uint32) string {
	id := store.BlobID(eid, ref)
	return id + "." + base64.RawURLEncoding.EncodeToString(c.tail(id, crc))
}

// Decode checks a key and returns what it names. Errors wrap
// store.ErrInvalidArgument.
func (c blobKeyCodec) Decode(key string) (eid string, ref store.BlobRef, crc uint32, err error) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return "", store.BlobRef{}, 0, fmt.Errorf("blob key: no MAC: %w", store.ErrInvalidArgument)
	}
	id := key[:i]
	// Strict decoding still skips CR and LF: only the key's one spelling
	// (what Encode writes) is accepted.
	got, err := base64.RawURLEncoding.Strict().DecodeString(key[i+1:])
	if err != nil || len(got) != 4+blobKeyMACBytes || base64.RawURLEncoding.EncodeToString(got) != key[i+1:] {
		return "", store.BlobRef{}, 0, fmt.Errorf("blob key: malformed: %w", store.ErrInvalidArgument)
	}
	crc = binary.BigEndian.Uint32(got)
	if !hmac.Equal(got, c.tail(id, crc)) {
		return "", store.BlobRef{}, 0, fmt.Errorf("blob key: not issued by this service: %w", store.ErrInvalidArgument)
	}
	eid, ref, err = store.ParseBlobID(id)
	return eid, ref, crc, err
}

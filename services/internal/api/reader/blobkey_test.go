package reader

import (
	"errors"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func TestBlobKeyRoundTrip(t *testing.T) {
	t.Parallel()
	c := blobKeyCodec{secret: []byte("0123456789abcdef")}
	eid := store.NewExperimentID()
	ref := store.BlobRef{Run: "train/a b", Tag: "img/ü", Step: 1 << 40, Index: 3}
	key := c.Encode(eid, ref, 0xdeadbeef)
	gotEID, gotRef, crc, err := c.Decode(key)
	if err != nil || gotEID != eid || gotRef != ref || crc != 0xdeadbeef {
		t.Errorf("Decode(Encode) = %s %+v %x %v", gotEID, gotRef, crc, err)
	}
	other := blobKeyCodec{secret: []byte("another secret!!")}
	if _, _, _, err := other.Decode(key); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("another secret accepted the key: %v", err)
	}
}

// Keys arrive from clients: Decode must reject anything it did not issue
// and never panic.
func FuzzDecodeBlobKey(f *testing.F) {
	c := blobKeyCodec{secret: []byte("0123456789abcdef")}
	f.Add(c.Encode(store.NewExperimentID(), store.BlobRef{Run: "r", Tag: "t", Step: 1}, 7))
	f.Add("AAAAAAAAAAAAAAAAAAAAAA.AAAA.AAAA")
	f.Fuzz(func(t *testing.T, key string) {
		eid, ref, crc, err := c.Decode(key)
		if err != nil {
			return
		}
		if again := c.Encode(eid, ref, crc); again != key {
			t.Errorf("Decode accepted %q, which it encodes as %q", key, again)
		}
	})
}

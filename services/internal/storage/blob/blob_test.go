package blob

import (
	"errors"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"testing"
)

// The layout is fixed: objects already written under it must stay where
// their rows say, so the digests are spelled out (computed independently,
// with Python's hashlib, from the uvarint-length-prefixed names).
func TestObjectKeyLayout(t *testing.T) {
	for _, tc := range []struct {
		run, tag string
		step     int64
		index    int64
		want     string
	}{
		{"train", "images", 7, 0, "experiments/E/blobs/6dc461b1e59823d0ac9686d458101205da8b2743e8776add130a960ddf18b241/7/0"},
		{"a/b", "x.y", -3, 2, "experiments/E/blobs/7bc2d01047c1fe5f7446d0f3d39ffed774d81b2b9726b0e7e44ff750632064ff/-3/2"},
		{"", "..", 0, 1, "experiments/E/blobs/9a297dcbb20dc979b39e1b4bf5bbd18e8e7eb7cd0bdf69c3dd6cdd6822449038/0/1"},
		{"50%", "ü", 1, 1, "experiments/E/blobs/eea6d393cc996b67f2a394d8c2e67376fbb39d21a6849b0a3a1efa5fc8359efb/1/1"},
		// The length prefixes keep ("a", "bc") and ("ab", "c") apart.
		{"a", "bc", 0, 0, "experiments/E/blobs/ea1cc672b17a5c99d273503a298965ef39b3616dfc46fb44022907c44f4e34fa/0/0"},
		{"ab", "c", 0, 0, "experiments/E/blobs/c150b536a0d7450f5d040d8dac8f6924ce08e5f015c594e343e9e485463ef3bb/0/0"},
	} {
		got := ObjectKey("E", tc.run, tc.tag, tc.step, tc.index)
		if got != tc.want {
			t.Errorf("ObjectKey(%q, %q, %d, %d) = %q, want %q", tc.run, tc.tag, tc.step, tc.index, got, tc.want)
		}
	}
	longest := ObjectKey(strings.Repeat("E", 64), strings.Repeat("实", 341), "t", math.MinInt64, math.MinInt64)
	if len(longest) != MaxObjectKeyBytes {
		t.Errorf("the longest key has %d bytes, MaxObjectKeyBytes says %d", len(longest), MaxObjectKeyBytes)
	}
}

func TestChecksumReader(t *testing.T) {
	data := "hello, blob"
	good := crc32.Checksum([]byte(data), CastagnoliTable)
	if b, err := io.ReadAll(NewChecksumReader(strings.NewReader(data), good)); err != nil || string(b) != data {
		t.Errorf("matching checksum: read %q, %v", b, err)
	}
	_, err := io.ReadAll(NewChecksumReader(strings.NewReader(data), good^1))
	if !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong checksum: error %v, want ErrChecksum", err)
	}
}

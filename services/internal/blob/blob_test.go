package blob

import (
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

func TestObjectKeyLayout(t *testing.T) {
	for _, tc := range []struct {
		run, tag string
		step     int64
		index    int64
		want     string
	}{
		{"train", "images", 7, 0, "experiments/E/runs/train/tags/images/steps/7/0"},
		{"a/b", "x.y", -3, 2, "experiments/E/runs/a%2Fb/tags/x%2Ey/steps/-3/2"},
		{"", "..", 0, 1, "experiments/E/runs/%/tags/%2E%2E/steps/0/1"},
		{"50%", "ü", 1, 1, "experiments/E/runs/50%25/tags/%C3%BC/steps/1/1"},
	} {
		got := ObjectKey("E", tc.run, tc.tag, tc.step, tc.index)
		if got != tc.want {
			t.Errorf("ObjectKey(%q, %q, %d, %d) = %q, want %q", tc.run, tc.tag, tc.step, tc.index, got, tc.want)
		}
		if !strings.HasPrefix(got, ExperimentPrefix("E")) {
			t.Errorf("%q is outside the experiment prefix", got)
		}
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

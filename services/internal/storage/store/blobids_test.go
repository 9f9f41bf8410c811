package store

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestBlobIDsRoundTrip(t *testing.T) {
	eid := NewExperimentID()
	for _, ref := range []BlobRef{
		{Run: ".", Tag: "images/sample", Step: 0, Index: 0},
		{Run: "train/a.b", Tag: "t\x00ag ü", Step: -5, Index: 7},
		{Run: "r", Tag: "", Step: 1 << 62, Index: 1 << 40},
	} {
		gotEID, got, err := ParseBlobID(BlobID(eid, ref))
		if err != nil || gotEID != eid || got != ref {
			t.Errorf("ParseBlobID(BlobID(%+v)) = %s, %+v, %v", ref, gotEID, got, err)
		}
		seq := BlobSequenceID(eid, ref.Run, ref.Tag, ref.Step)
		gotEID, got, err = ParseBlobSequenceID(seq)
		want := ref
		want.Index = 0
		if err != nil || gotEID != eid || got != want {
			t.Errorf("ParseBlobSequenceID = %s, %+v, %v; want %+v", gotEID, got, err, want)
		}
		if ExperimentOfBlobKey(seq) != eid {
			t.Errorf("ExperimentOfBlobKey(%q) != %s", seq, eid)
		}
		// A sequence ID is not a blob ID and vice versa.
		if _, _, err := ParseBlobID(seq); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobID(sequence id) = %v", err)
		}
		if _, _, err := ParseBlobSequenceID(BlobID(eid, ref)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobSequenceID(blob id) = %v", err)
		}
	}
	good := BlobID(eid, BlobRef{Run: "run", Tag: "tag", Step: 1, Index: 2})
	// A line break inside the reference (base64 decoding skips it) is
	// another spelling of the same blob: refused.
	if cut := strings.LastIndexByte(good, '.') + 3; cut < len(good) {
		if _, _, err := ParseBlobID(good[:cut] + "\r\n" + good[cut:]); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobID with a line break in its reference: %v, want invalid", err)
		}
	}
	goodSeq := BlobSequenceID(eid, "run", "tag", 1)
	for _, bad := range []string{"", "nodot", eid + ".", eid + ".!!", "short.AAAA", eid + ".AQ",
		// The decoder skips line breaks; an ID with one names the same key
		// under a second spelling (found by FuzzParseBlobID in CI).
		good[:len(good)-3] + "\n" + good[len(good)-3:],
		good[:len(good)-3] + "\r" + good[len(good)-3:],
		// An over-long varint for the index (0x80 0x00 is 0 in two bytes).
		eid + "." + base64.RawURLEncoding.EncodeToString(append(mustDecode(t, goodSeq), 0x80, 0x00)),
	} {
		if _, _, err := ParseBlobID(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobID(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func FuzzParseBlobID(f *testing.F) {
	f.Add(BlobID(NewExperimentID(), BlobRef{Run: "r", Tag: "t", Step: 3, Index: 1}))
	f.Add(BlobSequenceID(NewExperimentID(), "r", "t", 3))
	f.Fuzz(func(t *testing.T, id string) {
		if eid, ref, err := ParseBlobID(id); err == nil {
			if again := BlobID(eid, ref); again != id {
				t.Errorf("BlobID(ParseBlobID(%q)) = %q", id, again)
			}
		}
		if eid, ref, err := ParseBlobSequenceID(id); err == nil {
			if again := BlobSequenceID(eid, ref.Run, ref.Tag, ref.Step); again != id {
				t.Errorf("BlobSequenceID(ParseBlobSequenceID(%q)) = %q", id, again)
			}
		}
	})
}

func mustDecode(t *testing.T, id string) []byte {
	t.Helper()
	_, enc, _ := strings.Cut(id, ".")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
